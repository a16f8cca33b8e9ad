"""``armada admin prune [--dry-run]`` and ``armada admin archive show`` on both databases."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner, Result

from armada.cli.main import app
from armada.eventstore.database import Database
from armada.model import events as ev
from tests.factories import finished, make_job, submission

OLD = datetime(2020, 1, 1, tzinfo=UTC)


def armada(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={})


async def fill(url: str, finished_ids: list[str]) -> None:
    database = await Database(url).open(listen=False)
    try:
        for job_id in finished_ids:
            await database.store.append(finished(job_id, OLD))
        await database.store.append(submission(make_job()))  # queued: never expires
        await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    finally:
        await database.close()


def test_dry_run_counts_then_prune_archives_and_deletes(database_url: str, tmp_path: Path) -> None:
    ids = sorted(make_job().id for _ in range(3))
    asyncio.run(fill(database_url, ids))
    config = tmp_path / "armada.yaml"
    config.write_text(f"retention:\n  archiveDir: {tmp_path / 'archive'}\n")
    common = ["--database-url", database_url, "--config", str(config)]

    dry = armada("admin", "prune", "--dry-run", "--expire-after", "24h", *common)
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("would prune 3 jobs finished before ")
    assert ": 9 events, about " in dry.stdout
    assert armada("admin", "prune", "--expire-after", "off", *common).stdout.startswith("retention is off")

    pruned = armada("admin", "prune", "--expire-after", "24h", *common)
    assert pruned.exit_code == 0, pruned.output
    assert "\npruned 3 jobs finished before " in pruned.stdout
    again = armada("admin", "prune", "--dry-run", "--expire-after", "24h", *common)
    assert again.stdout.startswith("would prune 0 jobs")
    check = armada("admin", "check", "--database-url", database_url)
    assert check.exit_code == 0, check.output

    (archived,) = (tmp_path / "archive").iterdir()
    shown = armada("admin", "archive", "show", str(archived))
    assert [line.split()[0] for line in shown.stdout.splitlines()] == ids
    assert "CANCELLED" in shown.stdout and "3 events  0 runs" in shown.stdout
    lines = armada("admin", "archive", "show", "--json", str(archived)).stdout.splitlines()
    assert [json.loads(line)["jobId"] for line in lines] == ids
    assert [event["event"]["type"] for event in json.loads(lines[0])["events"]] == [
        "submitted",
        "queued",
        "cancelled",
    ]
