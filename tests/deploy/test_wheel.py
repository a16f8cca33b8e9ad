"""The wheel users install (``pipx install armada-scheduler``), run from its own virtualenv
with nothing of the work tree on the path: a module, a migration or a Lookout file left out
of the package fails here. ``.ci/run`` hands over the wheel it built (tests/installed.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import psycopg
import pytest
from alembic.script import ScriptDirectory

from armada.eventstore.dialects import libpq_conninfo
from tests.databases import postgres_database
from tests.installed import Installed
from tests.processes import ROOT, armada_command, process_env, running_server

STATIC = ROOT / "armada" / "lookout" / "static"
JOB = """\
queue: wheel
jobSetId: smoke
jobs:
  - namespace: default
    priority: 0
    podSpec:
      restartPolicy: Never
      containers:
        - name: main
          image: alpine:latest
          command: [sh]
          args: [-c, "exit 0"]
          resources:
            limits: {memory: 64Mi, cpu: 100m}
            requests: {memory: 64Mi, cpu: 100m}
"""


def run(installed: Installed, *args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """The installed ``armada`` command's output (it must succeed)."""
    result = subprocess.run(
        armada_command(*args, program=installed.armada),
        cwd=cwd,
        env=process_env(env, source=False),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"armada {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result.stdout


def test_the_command_runs_the_installed_package(installed_armada: Installed, tmp_path: Path) -> None:
    where = subprocess.run(
        [str(installed_armada.python), "-c", "import armada; print(armada.__file__)"],
        cwd=tmp_path,
        env=process_env(source=False),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(installed_armada.venv), where


def test_serves_a_job_and_lookout_on_a_fresh_sqlite_file(installed_armada: Installed, tmp_path: Path) -> None:
    database = tmp_path / "fresh.db"
    job_file = tmp_path / "job.yaml"
    job_file.write_text(JOB)
    with running_server(
        tmp_path, "--dev", database_url=f"sqlite:///{database}", program=installed_armada.armada
    ) as server:

        def client(*args: str) -> str:
            return run(installed_armada, *args, cwd=tmp_path, env={"ARMADA_URL": server.url})

        client("queue", "create", "wheel")
        client("submit", str(job_file))
        summary = client("watch", "wheel", "smoke", "--exit-if-inactive")
        assert "succeeded: 1" in summary, summary

        page = httpx.get(f"{server.url}/jobs")
        assert page.status_code == 200 and "/static/js/app.js" in page.text
        # Every file of Lookout's app is in the package, as it is in the work tree.
        for source in sorted(path for path in STATIC.rglob("*") if path.is_file()):
            served = httpx.get(f"{server.url}/static/{source.relative_to(STATIC).as_posix()}")
            assert (served.status_code, served.content) == (200, source.read_bytes()), source
    assert database.stat().st_size > 0


@pytest.mark.postgres
def test_migrates_a_fresh_postgresql_database(installed_armada: Installed, tmp_path: Path) -> None:
    with postgres_database() as url:
        assert "up to date" in run(installed_armada, "admin", "migrate", "--database-url", url, cwd=tmp_path)
        with psycopg.connect(libpq_conninfo(url)) as conn:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    # At the work tree's head: every migration is in the package.
    assert row == (ScriptDirectory(str(ROOT / "migrations")).get_current_head(),)
