"""The README's quickstart: ``armada serve --dev`` runs the seeds' example job for real, and
its output reads like a job printout (one line per state change, no HTTP request lines)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.processes import ROOT, armada_command, free_port, process_env, running_server


def test_dev_server_runs_the_seed_example_as_a_local_process(tmp_path: Path) -> None:
    example = (ROOT / "examples" / "example-job.yaml").read_text()
    assert "sleep $(( (RANDOM % 60) + 10 ))" in example
    job_file = tmp_path / "example-job.yaml"
    job_file.write_text(example.replace("(RANDOM % 60) + 10", "(RANDOM % 2) + 1"))  # same shape, shorter

    grpc = {"ARMADA_SERVER_GRPC_PORT": str(free_port())}  # on, as for a user (the tests turn it off)
    with running_server(tmp_path, "--dev", env=grpc) as server:

        def armada(*args: str) -> str:
            result = subprocess.run(
                armada_command(*args),
                env=process_env({"ARMADA_URL": server.url}),
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            return result.stdout

        armada("queue", "create", "example")
        armada("submit", str(job_file))
        summary = armada("watch", "example", "job-set-1", "--exit-if-inactive")
        output = server.process.log()
    assert "succeeded: 1" in summary
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    printout = [line for line in lines if line.get("logger") == "armada.jobs"]
    last = {"event": "job succeeded", "queue": "example", "job_set": "job-set-1"}
    assert last.items() <= printout[-1].items()
    assert all(line["job_id"] for line in printout)
    assert not [line for line in lines if line.get("logger") in ("httpx", "httpcore")], "no transport chatter"
    raw = [line for line in output.splitlines() if line.strip() and not line.startswith("{")]
    assert not raw, "every line is the server's own (gRPC's core logs errors only)"
