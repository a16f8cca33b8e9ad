"""A PostgreSQL server of the test's own, to stop and start at will.

The machine's shared PostgreSQL must never be stopped, so the outage test runs ``initdb`` in
a temporary directory and controls that cluster with ``pg_ctl``. PostgreSQL refuses to run
as root, so as root every command runs as the ``postgres`` OS user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.processes import free_port

PG_BIN = Path(os.environ.get("ARMADA_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


class PrivatePostgres:
    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(str(PG_BIN / "initdb"), "-D", str(self.directory / "data"), "-A", "trust", "-U", "postgres")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        data, log = str(self.directory / "data"), str(self.directory / "postgres.log")
        self._run(str(PG_BIN / "pg_ctl"), "-D", data, "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.directory / "data"), "-m", "fast", "-w", "stop")


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A fresh, running PostgreSQL cluster on a free port; removed afterwards."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no PostgreSQL binaries in {PG_BIN} (set ARMADA_TEST_PG_BIN)")
    directory = Path(tempfile.mkdtemp(prefix="armada-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    server = PrivatePostgres(directory, free_port())
    try:
        server.init()
        server.start()
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
