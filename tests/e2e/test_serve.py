"""``armada serve`` as a real process: embedded default, health, graceful stop, bad schema."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path

import httpx

from armada.eventstore import migrate
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


def test_serve_refuses_a_database_two_contract_steps_ahead(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'armada.db'}"
    subprocess.run(armada_command("admin", "migrate", "--database-url", url), env=process_env(), check=True)
    steps = migrate.contract_steps(migrate.head()) + 2
    with sqlite3.connect(tmp_path / "armada.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_future'")
        conn.execute(f"UPDATE schema_compatibility SET contract_steps = {steps}")
    result = subprocess.run(
        armada_command("serve", "--database-url", url, "--port", "0"),
        env=process_env(),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "2 contract steps ahead of this armada" in result.stderr
