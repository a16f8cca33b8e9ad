"""The README's quickstart: ``armada serve --dev`` runs the seeds' example job for real."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.processes import ROOT, armada_command, process_env, running_server


def test_dev_server_runs_the_seed_example_as_a_local_process(tmp_path: Path) -> None:
    example = (ROOT / "examples" / "example-job.yaml").read_text()
    assert "sleep $(( (RANDOM % 60) + 10 ))" in example
    job_file = tmp_path / "example-job.yaml"
    job_file.write_text(example.replace("(RANDOM % 60) + 10", "(RANDOM % 2) + 1"))  # same shape, shorter

    with running_server(tmp_path, "--dev") as server:

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
    assert "succeeded: 1" in summary
