"""Real processes: HTTPS with a local CA and auth, an executor verifying the server, and
``armada serve --dev`` whose in-process executor gets past authentication."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import trustme

from armada.client import ArmadaClient
from armada.client.config import ClientConfig
from armada.model.queues import Queue
from tests.api.jobs import item
from tests.processes import ROOT, ArmadaProcess, armada_command, free_port, process_env

EXAMPLE = str(ROOT / "examples" / "config" / "auth-basic.yaml")


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(CA bundle, server certificate, server key) from a CA made for this test."""
    directory = tmp_path_factory.mktemp("tls")
    authority = trustme.CA()
    server = authority.issue_cert("127.0.0.1", "localhost")
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    authority.cert_pem.write_to_path(str(paths[0]))
    server.cert_chain_pems[0].write_to_path(str(paths[1]))
    server.private_key_pem.write_to_path(str(paths[2]))
    return paths


def trusting(bundle: Path | None) -> ssl.SSLContext | bool:
    return ssl.create_default_context(cafile=str(bundle)) if bundle else True


@contextmanager
def serve(workdir: Path, *args: str, scheme: str, ca_bundle: Path | None = None) -> Iterator[str]:
    port = free_port()
    database = f"sqlite:///{workdir / 'armada.db'}"
    process = ArmadaProcess(
        ["serve", "--port", str(port), "--database-url", database, "--config", EXAMPLE, *args],
        cwd=workdir,
        log_path=workdir / f"serve-{port}.log",
        # A --dev executor keeps its runs here: not in the shared default under /tmp.
        env={"ARMADA_EXECUTOR_PROCESS": json.dumps({"stateDir": str(workdir / "runs")})},
    )
    url = f"{scheme}://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not become healthy:\n{process.log()}")
            try:
                if httpx.get(f"{url}/health", verify=trusting(ca_bundle)).status_code == 204:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.stop()


def client(url: str, user: str, ca_cert: Path | None = None) -> ArmadaClient:
    return ArmadaClient(
        ClientConfig(armada_url=url, username=user, password=f"{user}-pass", ca_cert=str(ca_cert or ""))
    )


def wait_for_state(armada: ArmadaClient, job_id: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (current := armada.job_status([job_id])[job_id]) != state:
        assert time.monotonic() < deadline, f"job {job_id} is {current}, not {state}"
        time.sleep(0.2)


def test_https_with_auth_and_an_executor_that_verifies_the_server(
    tmp_path: Path, ca: tuple[Path, Path, Path]
) -> None:
    bundle, cert, key = ca
    with serve(
        tmp_path, "--tls-cert", str(cert), "--tls-key", str(key), scheme="https", ca_bundle=bundle
    ) as url:
        with pytest.raises(httpx.ConnectError):  # not trusted without the CA
            httpx.get(f"{url}/health")
        with client(url, "admin", bundle) as admin:
            admin.create_queue(Queue(name="team-a-queue", group_owners=["team-a"]))
        # The CLI: credentials and the CA come before the command (or from ARMADA_* variables).
        listed = subprocess.run(
            armada_command("--ca-cert", str(bundle), "queue", "list", "--url", url),
            env=process_env({"ARMADA_USERNAME": "bob", "ARMADA_PASSWORD": "bob-pass"}),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr
        assert "team-a-queue" in listed.stdout
        with client(url, "alice", bundle) as alice:
            job_id = alice.submit_jobs("team-a-queue", "set-1", [item()])[0]
            executor = ArmadaProcess(
                [
                    "executor",
                    "--server", url,
                    "--cluster-id", "cluster-a",  # the example token may act as this id only
                    "--backend", "fake",
                    "--fake-nodes", "1",
                    "--ca-cert", str(bundle),
                    "--token", "executor-token",
                ],
                cwd=tmp_path,
                log_path=tmp_path / "executor.log",
            )  # fmt: skip
            try:
                wait_for_state(alice, job_id, "SUCCEEDED")
            finally:
                executor.stop()
            events = httpx.post(
                f"{url}/v1/job-set/team-a-queue/set-1", auth=("alice", "alice-pass"), verify=trusting(bundle)
            )
            assert '"owner":"alice"' in events.text


def test_dev_executor_runs_jobs_when_auth_is_required(tmp_path: Path) -> None:
    with serve(tmp_path, "--dev", scheme="http") as url:
        assert httpx.get(f"{url}/v1/batched/queues").status_code == 401
        with client(url, "admin") as admin:
            admin.create_queue(Queue(name="dev-queue", user_owners=["bob"]))
        with client(url, "bob") as bob:
            job_id = bob.submit_jobs("dev-queue", "set-1", [item()])[0]
            wait_for_state(bob, job_id, "SUCCEEDED")
