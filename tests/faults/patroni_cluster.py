"""A PostgreSQL HA cluster of the test's own: etcd and two Patroni-managed PostgreSQL
instances on loopback ports, with synchronous replication, and HAProxy routing to the
primary by Patroni's health check, as docs/deployment.md describes.

Debian's ``patroni``, ``etcd-server`` and ``haproxy`` packages (installed by ``.ci/run``). PostgreSQL
refuses to run as root, so as root Patroni runs as the ``postgres`` OS user. Patroni's
``ttl``/``loop_wait`` are short so that a failover fits a test.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.faults.private_postgres import PG_BIN
from tests.processes import free_port

#: Seconds the leader key lives without renewal: a dead primary's lock is gone after this.
TTL = 10
LOOP_WAIT = 1
RETRY_TIMEOUT = 3


class Member:
    """One Patroni-managed PostgreSQL instance."""

    def __init__(self, directory: Path, name: str, etcd: str) -> None:
        self.name = name
        self.port, self.api_port = free_port(), free_port()
        self.directory = directory / name
        self.log_path = directory / f"{name}.log"
        self.config = directory / f"{name}.yml"
        self.config.write_text(json.dumps(self._settings(directory, etcd)))  # JSON is YAML
        self.process: subprocess.Popen[bytes] | None = None

    def _settings(self, directory: Path, etcd: str) -> dict[str, object]:
        return {
            "scope": "armada-ha",
            "name": self.name,
            "log": {"level": "INFO"},
            "restapi": {
                "listen": f"127.0.0.1:{self.api_port}",
                "connect_address": f"127.0.0.1:{self.api_port}",
            },
            "etcd3": {"hosts": [etcd]},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL,
                    "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    "synchronous_mode": True,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "parameters": {
                            "wal_log_hints": "on",
                            "max_wal_senders": 5,
                            "max_replication_slots": 5,
                        },
                    },
                },
                "initdb": [{"auth": "trust"}, {"encoding": "UTF8"}],
                "pg_hba": [
                    "local all all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{self.port}",
                "connect_address": f"127.0.0.1:{self.port}",
                "data_dir": str(self.directory),
                "bin_dir": str(PG_BIN),
                "pgpass": str(directory / f"{self.name}.pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres", "password": "postgres"},
                    "replication": {"username": "replicator", "password": "replicator"},
                    "rewind": {"username": "postgres", "password": "postgres"},
                },
                "parameters": {"unix_socket_directories": str(directory), "fsync": "off"},
            },
        }

    def start(self) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*prefix, "patroni", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def state(self) -> dict[str, object]:
        """Patroni's view of this member (``role``: primary or replica; ``state``)."""
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.api_port}/patroni", timeout=2)
            return dict(answer.json())
        except (httpx.HTTPError, ValueError):
            return {}

    def postmaster_pid(self) -> int:
        return int((self.directory / "postmaster.pid").read_text().split()[0])

    def kill_postgres(self) -> None:
        """SIGKILL the postmaster (its backends end with it)."""
        os.kill(self.postmaster_pid(), signal.SIGKILL)

    def kill_patroni(self) -> None:
        """SIGKILL Patroni and the ``runuser`` that started it; its PostgreSQL keeps running."""
        assert self.process is not None
        for pid in [*_children(self.process.pid), self.process.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.kill(self.postmaster_pid(), signal.SIGKILL)


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (runuser's Patroni)."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    return [int(line) for line in found.stdout.split()]


class PatroniCluster:
    def __init__(self, directory: Path, etcd: str) -> None:
        self.members = [Member(directory, "pg1", etcd), Member(directory, "pg2", etcd)]
        #: HAProxy's port, routing to the member whose Patroni answers ``GET /primary`` 200.
        self.proxy_port = free_port()

    @property
    def url(self) -> str:
        """Armada's multi-host URL: libpq tries each host and keeps the writable one."""
        hosts = "&".join(f"host=127.0.0.1:{m.port}" for m in self.members)
        return f"postgresql+psycopg://postgres:postgres@/postgres?{hosts}&target_session_attrs=read-write"

    @property
    def proxy_url(self) -> str:
        """Armada's URL through HAProxy (the fencing docs/deployment.md describes)."""
        return f"postgresql+psycopg://postgres:postgres@127.0.0.1:{self.proxy_port}/postgres"

    def haproxy_config(self) -> str:
        """HAProxy in front of the members, as docs/deployment.md's example: a member is
        routed to only while its Patroni says it holds the leader key, and connections to a
        member marked down are cut (a primary whose Patroni died is fenced off)."""
        servers = "\n".join(
            f"    server {m.name} 127.0.0.1:{m.port} check port {m.api_port}" for m in self.members
        )
        return f"""global
    maxconn 1000
defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s
listen armada-postgres
    bind 127.0.0.1:{self.proxy_port}
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
{servers}
"""

    def primary(self) -> Member | None:
        for member in self.members:
            state = member.state()
            if state.get("role") in ("primary", "master") and state.get("state") == "running":
                return member
        return None

    def restart_stopped(self) -> None:
        """Start Patroni again on members whose Patroni was killed (they rejoin as standbys)."""
        for member in self.members:
            if member.process is not None and member.process.poll() is not None:
                member.start()

    def wait_healthy(self, timeout: float = 120) -> Member:
        """Wait for a primary and a streaming synchronous standby."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            primary = self.primary()
            if primary is not None:
                cluster = httpx.get(f"http://127.0.0.1:{primary.api_port}/cluster", timeout=2).json()
                roles = {m["name"]: m.get("role") for m in cluster.get("members", [])}
                if "sync_standby" in roles.values():
                    return primary
            time.sleep(0.5)
        logs = "\n".join(m.log_path.read_text(errors="replace")[-3000:] for m in self.members)
        raise TimeoutError(f"no primary with a synchronous standby after {timeout}s:\n{logs}")


@contextmanager
def patroni_cluster() -> Iterator[PatroniCluster]:
    """etcd and two Patroni members, torn down afterwards."""
    if shutil.which("patroni") is None or shutil.which("etcd") is None:
        pytest.skip("Patroni and etcd are not installed (apt-get install patroni etcd-server)")
    directory = Path(tempfile.mkdtemp(prefix="armada-patroni-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    client_port, peer_port = free_port(), free_port()
    etcd_log = (directory / "etcd.log").open("ab")
    etcd = subprocess.Popen(
        [
            "etcd",
            "--name=etcd",
            f"--data-dir={directory / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{client_port}",
            f"--advertise-client-urls=http://127.0.0.1:{client_port}",
            f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-cluster=etcd=http://127.0.0.1:{peer_port}",
        ],
        stdout=etcd_log,
        stderr=subprocess.STDOUT,
    )
    cluster = PatroniCluster(directory, f"127.0.0.1:{client_port}")
    haproxy: subprocess.Popen[bytes] | None = None
    try:
        cluster.members[0].start()
        time.sleep(1)  # the first one bootstraps; the other then clones it
        cluster.members[1].start()
        if shutil.which("haproxy") is not None:
            (directory / "haproxy.cfg").write_text(cluster.haproxy_config())
            haproxy = subprocess.Popen(
                ["haproxy", "-db", "-f", str(directory / "haproxy.cfg")],
                stdout=etcd_log,
                stderr=subprocess.STDOUT,
            )
        cluster.wait_healthy()
        yield cluster
    finally:
        if haproxy is not None:
            haproxy.terminate()
            haproxy.wait(30)
        for member in cluster.members:
            member.stop()
        etcd.terminate()
        etcd.wait(30)
        etcd_log.close()
        shutil.rmtree(directory, ignore_errors=True)
