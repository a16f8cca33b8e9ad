"""The seeds' flow from the CLI against a real ``armada serve``: create queue, submit, watch.

Most commands run in-process (Typer's runner: same code, no interpreter start-up per
command); ``watch`` also runs as a real subprocess to see its live output.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from armada.cli.main import app
from tests.e2e.cli import armada
from tests.processes import ROOT, armada_command, process_env, running_server

EXAMPLE = ROOT / "examples" / "example-job.yaml"


def test_create_queue_submit_watch(tmp_path: Path, database_url: str) -> None:
    with running_server(tmp_path, database_url=database_url) as server:
        created = armada(server.url, "queue", "create", "example")
        assert created.exit_code == 0, created.output
        submitted = armada(server.url, "submit", str(EXAMPLE))
        assert submitted.exit_code == 0, submitted.output
        [job_id] = [line.split()[2] for line in submitted.stdout.splitlines()]

        with subprocess.Popen(
            armada_command("watch", "example", "job-set-1"),
            env=process_env({"ARMADA_URL": server.url}),
            stdout=subprocess.PIPE,
            text=True,
        ) as watcher:
            assert watcher.stdout is not None
            assert watcher.stdout.readline().strip() == "1 job(s) | queued: 1"
            watcher.terminate()

        status = armada(server.url, "job", "status", job_id, "--json")
        assert json.loads(status.stdout) == {job_id: "QUEUED"}
        listed = armada(server.url, "queue", "list", "--json")
        assert [q["name"] for q in json.loads(listed.stdout)] == ["example"]
        described = armada(server.url, "queue", "list").stdout.splitlines()
        assert [line.split("\t")[0] for line in described] == ["example"]

        cancelled = armada(server.url, "cancel", "job-set", "example", "job-set-1", "--reason", "done")
        assert cancelled.exit_code == 0, cancelled.output
        finished = armada(server.url, "watch", "example", "job-set-1", "--exit-if-inactive")
        assert finished.exit_code == 0
        assert f"job {job_id} cancelled: done" in finished.stdout
        assert finished.stdout.splitlines()[-1] == "1 job(s) | cancelled: 1"
        raw = armada(server.url, "watch", "example", "job-set-1", "--exit-if-inactive", "--raw")
        kinds = [next(iter(json.loads(line)["result"]["message"])) for line in raw.stdout.splitlines()]
        assert kinds == ["submitted", "queued", "cancelling", "cancelled"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("queue: example\njobSetId: s\njobs:\n  - namespace: [\n", "line 5"),
        ("queue: example\njobSetId: s\njobs:\n  - namespace: default\n    colour: red\n", "colour"),
    ],
)
def test_bad_job_files_are_explained(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(content)
    result = armada("http://127.0.0.1:9", "submit", str(path))
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_errors_contexts_and_read_commands(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        result = armada(server.url, "submit", str(EXAMPLE))
        assert result.exit_code == 1
        assert result.stderr.strip() == "error: queue 'example' does not exist; create it first (field queue)"
        assert armada(server.url, "submit", str(EXAMPLE), "--dry-run").exit_code == 0
        missing = armada(server.url, "queue", "get", "nothing")
        assert (missing.exit_code, missing.stderr.count("\n")) == (1, 1)
        assert "does not exist" in missing.stderr

        home = tmp_path / "home"
        (home / ".config" / "armada").mkdir(parents=True)
        (home / ".config" / "armada" / "config.yaml").write_text(
            f"currentContext: local\ncontexts:\n  local:\n    armadaUrl: {server.url}\n"
        )
        from_context = CliRunner().invoke(
            app, ["queue", "create", "team-a", "--priority-factor", "2"], env={"HOME": str(home)}
        )
        assert from_context.exit_code == 0, from_context.output
        assert armada(server.url, "queue", "update", "team-a", "--label", "team=a").exit_code == 0
        got = json.loads(armada(server.url, "queue", "get", "team-a", "--json").stdout)
        assert got == {"name": "team-a", "priorityFactor": 2.0, "labels": {"team": "a"}}
        assert armada(server.url, "queue", "cordon", "team-a").exit_code == 0
        assert "cordoned" in armada(server.url, "queue", "get", "team-a").stdout
        assert armada(server.url, "queue", "uncordon", "team-a").exit_code == 0
        assert armada(server.url, "queue", "delete", "team-a").exit_code == 0
    unreachable = armada("http://127.0.0.1:9", "queue", "list")
    assert unreachable.exit_code == 1
    assert "cannot reach" in unreachable.stderr
