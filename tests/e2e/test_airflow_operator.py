"""Upstream's Airflow operator, ``armada-airflow`` from PyPI, against a real ``armada serve``,
both installed on one machine the way docs/grpc.md tells users to.

Airflow and the operator live in their own virtualenv, made on first use: the operator's
top-level package is named ``armada`` like ours, and it pins ``types-protobuf`` far below
this project's. The server is this project's wheel installed with pipx in its own
environment (tests/installed.py), run from the command pipx made. ``airflow_operator_run.py``
runs three task tries in Airflow's environment (a job that succeeds, one that fails, and a
second try that finds its job again by external job URI), as a user with Basic credentials
over TLS, the way the operator sends credentials.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from tests.e2e.grpc_servers import serve_with_grpc
from tests.installed import Installed

#: The operator's version under test.
REQUIREMENT = "armada-airflow==1.1.3"
#: Outside the work tree, so that CI's fresh clones on one machine share the install.
VENV = Path(os.environ.get("ARMADA_AIRFLOW_VENV", Path.home() / ".cache" / "armada-tests" / "airflow-venv"))
SCRIPT = Path(__file__).with_name("airflow_operator_run.py")
RUN_ID = "manual__2026-11-24T00:00:00"


@pytest.fixture(scope="session")
def airflow_python() -> Path:
    """The Python of a virtualenv holding Apache Airflow and armada-airflow (made once per
    machine: ~1 min, ~490 MB)."""
    python, stamp = VENV / "bin" / "python", VENV / ".installed"
    if not (stamp.exists() and stamp.read_text() == REQUIREMENT):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", REQUIREMENT],
            check=False,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert install.returncode == 0, f"pip install {REQUIREMENT} failed:\n{install.stderr[-4000:]}"
        stamp.write_text(REQUIREMENT)
    return python


@pytest.fixture
def server(installed_armada: Installed, tmp_path: Path) -> Iterator[tuple[str, str, ssl.SSLContext]]:
    """A ``--dev`` server (jobs run as local processes) of the pipx-installed command, with the
    example users, serving TLS with a certificate of a CA made here (the operator sends
    credentials only over TLS): its REST URL, its gRPC address and a context that trusts the CA."""
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1", "localhost")
    ca, cert, key = tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server.key"
    authority.cert_pem.write_to_path(str(ca))
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    env = {
        "ARMADA_EXECUTOR_PROCESS": json.dumps({"stateDir": str(tmp_path / "runs")}),
        "ARMADA_EXECUTOR_CA_CERT": str(ca),  # the in-process executor calls the server over HTTPS
    }
    tls = ("--tls-cert", str(cert), "--tls-key", str(key))
    database = f"sqlite:///{tmp_path / 'armada.db'}"
    process, port, grpc_port = serve_with_grpc(
        tmp_path, database, "--dev", *tls, env=env, program=installed_armada.armada
    )
    trust = ssl.create_default_context(cafile=str(ca))
    try:
        url = f"https://localhost:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert process.process.poll() is None, process.log()
            try:
                httpx.get(f"{url}/health", verify=trust).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, process.log()
                time.sleep(0.2)
        yield url, f"localhost:{grpc_port}", trust
    finally:
        process.stop()


def test_armada_operator_runs_jobs_and_reattaches(
    airflow_python: Path, installed_armada: Installed, server: tuple[str, str, ssl.SSLContext], tmp_path: Path
) -> None:
    # Side by side on one machine, each environment imports its own ``armada`` package.
    owners = ((airflow_python, "armada.operators.armada"), (installed_armada.python, "armada.cli.main"))
    for python, module in owners:
        subprocess.run([str(python), "-c", f"import {module}"], check=True, cwd=tmp_path)
    url, address, trust = server
    admin = httpx.Client(base_url=url, auth=("admin", "admin-pass"), verify=trust)
    queue = {"name": "airflow", "priorityFactor": 1, "groupOwners": ["team-a"]}  # alice is in team-a
    assert admin.post("/v1/queue", json=queue).status_code == 200
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(tmp_path / "ca.pem"),
    }
    run = subprocess.run(
        [str(airflow_python), str(SCRIPT), address, "airflow", "alice:alice-pass"],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    outcome = json.loads(run.stdout.strip().splitlines()[-1])

    succeeded = outcome["succeeds"]["result"]
    assert succeeded["job_state"] == "SUCCEEDED"
    assert succeeded["job_set_id"] == f"airflow-{RUN_ID}"
    uri = f"airflow://armada-e2e/succeeds/{RUN_ID}/-1"
    assert outcome["succeeds"]["annotations"]["armadaproject.io/externalJobUri"] == uri

    failed = outcome["fails"]
    assert (failed["state"], failed["reason"]) == ("FAILED", "exit code 3")

    # The second try found the first try's job by its external job URI.
    assert outcome["reattaches"]["result"]["job_id"] == succeeded["job_id"]

    # What the operator submitted over gRPC reads back over REST, annotations included.
    found = admin.post(
        "/v1/job/statusUsingExternalJobUri",
        json={"queue": "airflow", "jobset": f"airflow-{RUN_ID}", "externalJobUri": uri},
    ).json()
    assert found["jobStates"] == {succeeded["job_id"]: "SUCCEEDED"}
    admin.close()
