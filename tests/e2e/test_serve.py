"""``armada serve`` as a real process: embedded default, health, graceful stop, bad schema."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
from pathlib import Path

import httpx

from tests.processes import armada_command, process_env, running_server


def test_serve_with_no_arguments_uses_embedded_sqlite(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        assert httpx.get(f"{server.url}/health").status_code == 204
        assert httpx.get(f"{server.url}/version").json()["version"]
        assert httpx.get(f"{server.url}/schema/openapi.json").json()["info"]["title"] == "Armada"
        assert (tmp_path / "armada.db").exists()
        server.process.signal(signal.SIGTERM)
        assert server.process.wait(30) == 0
        assert "Application shutdown complete" in server.process.log()


def test_serve_refuses_a_database_from_a_newer_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'armada.db'}"
    subprocess.run(armada_command("admin", "migrate", "--database-url", url), env=process_env(), check=True)
    with sqlite3.connect(tmp_path / "armada.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_future'")
    result = subprocess.run(
        armada_command("serve", "--database-url", url, "--port", "0"),
        env=process_env(),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "newer than this armada" in result.stderr


def test_a_second_replica_on_a_taken_grpc_port_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        grpc_port = taken.getsockname()[1]
        result = subprocess.run(
            armada_command("serve", "--database-url", f"sqlite:///{tmp_path / 'armada.db'}", "--port", "0"),
            env=process_env({"ARMADA_SERVER_GRPC_PORT": str(grpc_port)}),
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 3
    assert f"cannot listen for gRPC on 127.0.0.1:{grpc_port} (in use)" in result.stderr
    assert "--grpc-port" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
