"""``armada serve`` as a real process: embedded default, health, graceful stop, bad schema."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path

import httpx

from armada.client import ArmadaClient
from armada.eventstore import migrate
from armada.model.queues import Queue
from tests.e2e.cluster import job
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


def _migrated_by_a_future_version(tmp_path: Path, steps_ahead: int) -> str:
    """A SQLite database as a version ``steps_ahead`` contract steps ahead of this one left it."""
    url = f"sqlite:///{tmp_path / 'armada.db'}"
    subprocess.run(armada_command("admin", "migrate", "--database-url", url), env=process_env(), check=True)
    steps = migrate.contract_steps(migrate.head()) + steps_ahead
    with sqlite3.connect(tmp_path / "armada.db") as conn:
        # What a future expand migration may do: a new table, a new column with a default.
        conn.execute("CREATE TABLE future_things (name VARCHAR(64) PRIMARY KEY)")
        conn.execute("ALTER TABLE jobs ADD COLUMN future_column INTEGER NOT NULL DEFAULT 0")
        conn.execute("UPDATE alembic_version SET version_num = '9999_future'")
        conn.execute(f"UPDATE schema_compatibility SET contract_steps = {steps}")
    return url


def test_serve_runs_on_a_database_one_contract_step_ahead(tmp_path: Path) -> None:
    """The next version's expand (and one contract) migrations leave this one serving: a
    rolling upgrade from this version on."""
    url = _migrated_by_a_future_version(tmp_path, 1)
    migrated = subprocess.run(
        armada_command("admin", "migrate", "--database-url", url),
        env=process_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    assert "at revision 9999_future, newer than this version's" in migrated.stdout
    with running_server(tmp_path, database_url=url) as server, ArmadaClient(server.url) as client:
        version = httpx.get(f"{server.url}/v1/version").json()
        assert (version["schemaRevision"], version["schemaHead"]) == ("9999_future", migrate.head())
        assert "database schema newer than this version" in server.process.log()
        client.create_queue(Queue(name="q"))
        [job_id] = client.submit_jobs("q", "set", [job("true")])  # rows into the widened table
        assert client.job_status([job_id]) == {job_id: "QUEUED"}


def test_serve_refuses_a_database_two_contract_steps_ahead(tmp_path: Path) -> None:
    url = _migrated_by_a_future_version(tmp_path, 2)
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
    migrate_command = armada_command("admin", "migrate", "--database-url", url)
    refused = subprocess.run(migrate_command, env=process_env(), capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "2 contract steps ahead" in refused.stderr, refused.stderr
