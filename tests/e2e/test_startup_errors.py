"""Start-up failures of ``armada serve`` and ``armada executor``, run as real processes: one
sentence on stderr and exit code 2, the traceback only with ``--debug``."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.processes import armada_command, process_env


@contextmanager
def taken_port() -> Iterator[int]:
    """A port another process (here, this one) listens on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = armada_command(*args)
    return subprocess.run(
        command, env=process_env(env), check=False, capture_output=True, text=True, timeout=60
    )


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error sentence the failed start printed, checked to be alone (no traceback)."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    database = ("--database-url", f"sqlite:///{tmp_path / 'armada.db'}")
    return run("serve", *database, "--grpc-port", "0", *args, env=env)


def test_serve_on_a_taken_http_port(tmp_path: Path) -> None:
    with taken_port() as port:
        line = error_line(serve(tmp_path, "--port", str(port)))
    assert line.startswith(f"error: cannot listen for HTTP on 127.0.0.1:{port} (in use)")


def test_a_second_replica_on_a_taken_grpc_port(tmp_path: Path) -> None:
    with taken_port() as port:
        result = run(
            "serve",
            *("--database-url", f"sqlite:///{tmp_path / 'armada.db'}", "--port", "0"),
            env={"ARMADA_SERVER_GRPC_PORT": str(port)},
        )
    line = error_line(result)
    assert f"cannot listen for gRPC on 127.0.0.1:{port} (in use)" in line and "--grpc-port" in line


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql+psycopg://armada:secret@127.0.0.1:1/armada",
            "postgresql+psycopg://armada:***@127.0.0.1:1",
        ),
        (
            "sqlite:////nonexistent/directory/armada.db",
            "sqlite+aiosqlite:////nonexistent/directory/armada.db",
        ),
    ],
)
def test_serve_with_the_database_out_of_reach(url: str, shown: str) -> None:
    line = error_line(run("serve", "--database-url", url, "--port", "0", "--grpc-port", "0"))
    assert line.startswith(f"error: cannot open the database {shown}")
    assert "secret" not in line


def test_serve_with_a_bad_setting(tmp_path: Path) -> None:
    line = error_line(serve(tmp_path, "--port", "0", env={"ARMADA_SERVER_SHUTDOWN_TIMEOUT": "soon"}))
    assert line.endswith("at `$.server.shutdownTimeout`")
    missing = {"ARMADA_SERVER_TLS_CERT": str(tmp_path / "none.pem"), "ARMADA_SERVER_TLS_KEY": "none.key"}
    line = error_line(serve(tmp_path, "--port", "0", env=missing))
    assert line.startswith(f"error: cannot load the TLS certificate {tmp_path / 'none.pem'}")


def test_debug_shows_the_traceback_too(tmp_path: Path) -> None:
    with taken_port() as port:
        result = serve(tmp_path, "--port", str(port), "--debug")
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "error: cannot listen for HTTP" in result.stderr


def executor(*args: str) -> subprocess.CompletedProcess[str]:
    return run("executor", "--server", "http://127.0.0.1:1", "--cluster-id", "c1", *args)


def test_executor_on_a_taken_metrics_port() -> None:
    with taken_port() as port:
        line = error_line(executor("--backend", "fake", "--metrics-port", str(port)))
    assert line.startswith(f"error: cannot listen for metrics on port {port} (in use)")


def test_executor_with_a_kubeconfig_it_cannot_load(tmp_path: Path) -> None:
    line = error_line(executor("--backend", "kubernetes", "--kubeconfig", str(tmp_path / "none")))
    assert line.startswith(f"error: cannot load the Kubernetes configuration ({tmp_path / 'none'})")


def test_executor_with_a_missing_ca_bundle(tmp_path: Path) -> None:
    line = error_line(executor("--backend", "fake", "--ca-cert", str(tmp_path / "ca.pem")))
    assert line == f"error: cannot load the CA bundle {tmp_path / 'ca.pem'}: No such file or directory"
