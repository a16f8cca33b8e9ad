"""Real ``armada serve`` processes refuse unsafe exposure: anonymous access or published
credentials on an address other than loopback (issue #15, safe defaults), or the process
backend, which gives every submitter a shell, serving a server off loopback (issue #34)."""

from __future__ import annotations

import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from armada.auth.secrets import hash_token
from tests.processes import ROOT, ArmadaProcess, armada_command, free_port, process_env, wait_until_healthy

EXAMPLE = str(ROOT / "examples" / "config" / "auth-basic.yaml")


def serve_exits(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``armada serve`` expecting it to refuse at once (a started server would time out)."""
    command = armada_command(
        "serve", "--port", str(free_port()), "--database-url", f"sqlite:///{tmp_path / 'a.db'}", *args
    )
    return subprocess.run(
        command, env=process_env(env), capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_anonymous_server_refuses_to_start_on_a_network_address(tmp_path: Path, host: str) -> None:
    result = serve_exits(tmp_path, "--host", host)
    assert result.returncode == 2, result.stderr
    assert "anonymous access is on" in result.stderr and "allowAnonymousOnNetwork" in result.stderr
    assert not (tmp_path / "a.db").exists()  # refused before touching anything


def test_published_example_credentials_are_refused_on_a_network_address(tmp_path: Path) -> None:
    result = serve_exits(tmp_path, "--host", "0.0.0.0", "--config", EXAMPLE)
    assert result.returncode == 2, result.stderr
    for where in ("basicUsers.alice.passwordHash", "basicUsers.admin.passwordHash", "tokens[0].tokenHash"):
        assert f"auth.{where} is a credential published" in result.stderr
    assert "anonymous access" not in result.stderr  # the example turns anonymous off


def test_anonymous_on_the_network_when_explicitly_allowed(tmp_path: Path) -> None:
    port = free_port()
    process = ArmadaProcess(
        [
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--database-url",
            f"sqlite:///{tmp_path / 'a.db'}",
        ],
        cwd=tmp_path,
        log_path=tmp_path / "serve.log",
        env={"ARMADA_AUTH_ALLOW_ANONYMOUS_ON_NETWORK": "true"},
    )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", process, logged=f"http://0.0.0.0:{port}")
        # Even so, anonymous callers never execute jobs.
        lease = {"executorId": "rogue", "pool": "default", "nodes": []}
        response = httpx.post(f"http://127.0.0.1:{port}/v1/executor/lease", json=lease, timeout=10)
        assert response.status_code == 403, response.text
    finally:
        process.stop()


def test_an_oidc_algorithm_misconfiguration_fails_at_start(tmp_path: Path) -> None:
    config = tmp_path / "oidc.yaml"
    config.write_text(
        "auth:\n  oidc: {issuer: i, audience: a, jwksUrl: 'https://idp.example/certs', algorithms: [HS256]}\n"
    )
    result = serve_exits(tmp_path, "--config", str(config))
    assert result.returncode == 2, result.stderr
    assert "auth.oidc.algorithms: 'HS256' is symmetric" in result.stderr


def own_credentials(tmp_path: Path, extra: str = "") -> str:
    """A settings file with a credential of its own (not one of examples/), so that only the
    process backend's rule is in the way of a network address."""
    config = tmp_path / "own.yaml"
    token_hash = hash_token(secrets.token_urlsafe(16))
    config.write_text(
        f"auth:\n  anonymous: false\n  tokens: [{{user: ops, tokenHash: '{token_hash}', groups: [admins]}}]\n"
        + extra
    )
    config.chmod(0o600)
    return str(config)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10"])
def test_dev_mode_refuses_a_network_address_without_the_acknowledgement(tmp_path: Path, host: str) -> None:
    """``--dev`` runs every submitted job as a process of this host: off loopback that is a
    shell for every submitter unless the operator says so."""
    result = serve_exits(tmp_path, "--dev", "--host", host, "--config", own_credentials(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "executor.process.allowRemoteSubmitters" in result.stderr and "not on loopback" in result.stderr
    assert not (tmp_path / "a.db").exists()  # refused before touching anything


def test_dev_mode_on_a_network_address_with_the_acknowledgement(tmp_path: Path) -> None:
    port = free_port()
    config = own_credentials(tmp_path, "executor:\n  process: {allowRemoteSubmitters: true}\n")
    state = Path(tempfile.gettempdir()) / f"armada-dev-{port}"
    database = f"sqlite:///{tmp_path / 'a.db'}"
    process = ArmadaProcess(
        [
            "serve",
            "--dev",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--config",
            config,
            "--database-url",
            database,
        ],
        cwd=tmp_path,
        log_path=tmp_path / "serve.log",
    )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", process, logged=f"http://0.0.0.0:{port}")
        # What a job could otherwise read: the database, and the dev executor's run state.
        assert stat.S_IMODE((tmp_path / "a.db").stat().st_mode) == 0o600
        deadline = time.monotonic() + 60
        while not state.exists() and time.monotonic() < deadline:  # made as the executor starts
            time.sleep(0.05)
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
    finally:
        process.stop()
        shutil.rmtree(state, ignore_errors=True)


def test_a_process_executor_refuses_a_server_off_loopback(tmp_path: Path) -> None:
    command = armada_command(
        "executor", "--backend", "process", "--server", "http://192.0.2.10:8080", "--process-state-dir"
    )
    result = subprocess.run(
        [*command, str(tmp_path / "state")],
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "executor.process.allowRemoteSubmitters" in result.stderr and "'192.0.2.10'" in result.stderr
    assert not (tmp_path / "state").exists()
