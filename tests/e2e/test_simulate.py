"""``armada simulate`` on a log recorded by a real server and a fake-cluster executor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.databases import database_url_for
from tests.e2e.cluster import FAST_SERVER_ENV
from tests.e2e.recording import fairness, record


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def recorded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, float, float]]:
    """The fairness scenario recorded by a real server, on each database."""
    workdir = tmp_path_factory.mktemp("simulate")
    with database_url_for(request.param, workdir) as url:
        since, until = record(workdir, url, fairness(waves=3))
        yield url, since, until


def simulate(url: str, since: float, until: float, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with the recording server's settings as the current ones."""
    window = ["--since", _rfc3339(since), "--until", _rfc3339(until)]
    return subprocess.run(
        [sys.executable, "-m", "armada", "simulate", "--database-url", url, *window, *args],
        capture_output=True,
        check=False,
        text=True,
        env={**os.environ, **FAST_SERVER_ENV},
        timeout=300,
    )


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()


def test_weight_3_for_the_lightest_queue_shortens_its_wait(
    tmp_path: Path, recorded: tuple[str, float, float]
) -> None:
    candidate = tmp_path / "candidate.yaml"
    candidate.write_text("queues:\n  - name: team-c\n    priorityFactor: 3\n")
    page = tmp_path / "page.html"
    done = simulate(*recorded, "--config", str(candidate), "--json", "--html", str(page))
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    scenarios = {s["name"]: s["figures"] for s in body["scenarios"]}
    assert list(scenarios) == ["recorded", "current", "candidate"]
    assert body["jobs"] == 3 * 3 * 6
    waits = {name: {q: f["meanWait"] for q, f in s["queues"].items()} for name, s in scenarios.items()}
    # team-c (weight 0.5) waits longest as recorded; at weight 3 it overtakes team-b (weight 2).
    assert waits["current"]["team-c"] > waits["current"]["team-b"]
    assert waits["candidate"]["team-c"] < waits["current"]["team-c"]
    assert waits["candidate"]["team-b"] > waits["current"]["team-b"]
    for figures in scenarios.values():
        assert all(f["started"] == f["jobs"] == 18 for f in figures["queues"].values())
        assert 0 < figures["pools"]["default"]["utilisation"]["cpu"] <= 1
    assert page.read_text().count("<svg") >= 4
    text = simulate(*recorded, "--config", str(candidate))
    assert "queue team-c" in text.stdout and "candidate" in text.stdout


def test_a_bad_candidate_is_refused_naming_the_field(
    tmp_path: Path, recorded: tuple[str, float, float]
) -> None:
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("queues:\n  - name: team-z\n    priorityFactor: 3\n")
    done = simulate(*recorded, "--config", str(unknown))
    assert done.returncode == 2 and "team-z" in done.stderr
    negative = tmp_path / "negative.yaml"
    negative.write_text("scheduling:\n  protectedFractionOfFairShare: -1\n")
    done = simulate(*recorded, "--config", str(negative))
    assert done.returncode == 2 and "protectedFractionOfFairShare" in done.stderr
