"""``armada testsuite run`` against ``armada serve --dev``: upstream's examples, failures, JUnit."""

from __future__ import annotations

import os
import subprocess
from contextlib import ExitStack
from pathlib import Path
from xml.etree import ElementTree as ET

import httpx
import pytest

from tests.databases import SQLITE_ONLY
from tests.e2e.cluster import executor, fake_nodes, wait_for
from tests.metrics import parse_samples, value
from tests.processes import (
    ROOT,
    Serve,
    Server,
    armada_command,
    free_port,
    process_env,
    running_server,
)

#: Where CI (and a checkout beside ``shared/``) has upstream's examples; overridable.
DEFAULT_EXAMPLES = ROOT.parent / "shared/reference/armada-testsuite"
EXAMPLES = Path(os.environ.get("ARMADA_TESTSUITE_EXAMPLES", DEFAULT_EXAMPLES))
#: Examples that need a real Kubernetes cluster (see docs/testsuite.md).
NEEDS_KUBERNETES = {"basic_gang"}
#: Examples too long for every run.
SLOW = {"performance_submit_1x1K"}


def examples(names: set[str] | None = None) -> list[Path]:
    if not EXAMPLES.is_dir():
        pytest.skip(f"upstream test-suite examples not found at {EXAMPLES}")
    found = sorted(EXAMPLES.glob("*.yaml"))
    if names is None:
        return [p for p in found if p.stem not in NEEDS_KUBERNETES | SLOW]
    return [p for p in found if p.stem in names]


@pytest.fixture(scope="module")
def serve() -> Serve:
    """The tests that take ``server`` share one ``--dev`` server (on SQLite: each case runs in a
    job set of its own)."""
    return Serve(args=("--dev",))


def run_suite(url: str, *args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    command = armada_command("testsuite", "run", *map(str, args), "--url", url)
    env = process_env()
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@SQLITE_ONLY
def test_upstream_examples_pass_against_the_process_backend(tmp_path: Path, server: Server) -> None:
    cases = examples()
    junit = tmp_path / "junit.xml"
    result = run_suite(server.url, *cases, "--junit", junit)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert sorted(line.split()[1] for line in lines[:-1]) == sorted(p.stem for p in cases)
    assert all(line.startswith("PASS ") and line.endswith("s)") for line in lines[:-1])
    assert lines[-1] == f"{len(cases)} passed, 0 failed"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == (str(len(cases)), "0")
    # The in-process executor of --dev counts into the server's own exposition.
    samples = parse_samples(httpx.get(f"{server.url}/metrics").text)
    assert value(samples, "armada_executor_leases_received_total", cluster="local") >= len(cases) - 1


@SQLITE_ONLY
def test_the_shipped_examples_pass_against_the_process_backend(server: Server) -> None:
    shipped = ROOT / "examples" / "testsuite"
    cases = sorted(shipped.glob("*.yaml"))
    assert len(cases) >= 8
    result = run_suite(server.url, shipped)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"{len(cases)} passed, 0 failed"


@SQLITE_ONLY
def test_failures_are_reported_and_exit_1(tmp_path: Path, server: Server) -> None:
    job = """
queue: e2e-test-queue
jobs:
  - namespace: default
    podSpec:
      restartPolicy: Never
      containers:
        - name: main
          image: alpine
          args: [{args}]
          resources:
            requests: {{cpu: 100m, memory: 25Mi}}
            limits: {{cpu: 100m, memory: 25Mi}}
---
timeout: "{timeout}"
expectedEvents:
  - submitted:
  - {expected}:
"""
    fails_early = job.format(args='"exit", "3"', timeout="60s", expected="succeeded")
    (tmp_path / "fails_early.yaml").write_text(fails_early)
    times_out = job.format(args='"sleep", "60"', timeout="2s", expected="cancelled")
    (tmp_path / "times_out.yaml").write_text(times_out)
    junit = tmp_path / "junit.xml"
    cases = (tmp_path / "fails_early.yaml", tmp_path / "times_out.yaml")
    result = run_suite(server.url, *cases, "--junit", junit)
    assert result.returncode == 1
    lines = {line.split()[1]: line for line in result.stdout.splitlines()[:-1]}
    assert "unexpected failed while waiting for succeeded" in lines["fails_early"]
    assert "timed out after 2s" in lines["times_out"]
    assert "waiting for cancelled" in lines["times_out"]
    assert result.stdout.splitlines()[-1] == "0 passed, 2 failed"
    failures = ET.parse(junit).getroot().findall("testsuite/testcase/failure")
    assert len(failures) == 2


def test_a_bad_case_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("queue: q\njobs: []\nexpectedEvent: []\n")
    result = run_suite("http://127.0.0.1:9", tmp_path / "bad.yaml")
    assert result.returncode == 2
    assert "expectedEvent" in result.stderr


@pytest.mark.slow
@SQLITE_ONLY
def test_upstream_performance_example(server: Server) -> None:
    result = run_suite(server.url, *examples(SLOW), timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"{len(SLOW)} passed, 0 failed"


SCHEDULED = (
    "armada_scheduler_scheduled_jobs_total",
    {"queue": "e2e-resume", "pool": "default", "priority_class": "armada-default", "type": "no-preemption"},
)
RESUME_CASE = """
queue: e2e-resume
jobs:
  - namespace: default
    podSpec:
      restartPolicy: Never
      containers:
        - name: main
          image: alpine
          args: ["sleep", "20"]
          resources:
            requests: {cpu: "1", memory: 25Mi}
            limits: {cpu: "1", memory: 25Mi}
---
timeout: "240s"
expectedEvents:
  - submitted:
  - running:
  - succeeded:
"""


@pytest.mark.slow
def test_the_watch_resumes_across_a_server_restart(tmp_path: Path) -> None:
    """The server restarts while the case's job runs: the runner reconnects and still passes."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    def scheduled() -> bool:
        return value(parse_samples(httpx.get(f"{url}/metrics").text), SCHEDULED[0], **SCHEDULED[1]) == 1

    (tmp_path / "resume.yaml").write_text(RESUME_CASE)
    with ExitStack() as first:
        first.enter_context(running_server(tmp_path, port=port))
        with executor(tmp_path, url, "c1", args=fake_nodes(1)):
            command = armada_command("testsuite", "run", str(tmp_path / "resume.yaml"), "--url", url)
            runner = subprocess.Popen(command, env=process_env(), stdout=subprocess.PIPE, text=True)
            try:
                wait_for(scheduled, timeout=120, what="the case's job to be leased")
                first.close()
                with running_server(tmp_path, port=port):
                    stdout, _ = runner.communicate(timeout=300)
            finally:
                runner.kill()
    assert runner.returncode == 0, stdout
    assert stdout.splitlines()[-1] == "1 passed, 0 failed"
