"""Real ``armada serve`` processes refuse unsafe exposure: anonymous access or published
credentials on an address other than loopback (issue #15, safe defaults)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

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
