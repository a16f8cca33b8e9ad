"""Start real ``armada`` processes for end-to-end tests and wait until they answer."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
import yaml

from armada.auth.identity import ANY_EXECUTOR
from armada.auth.secrets import hash_token
from armada.auth.settings import EXECUTORS
from tests.databases import database_url_for

ROOT = Path(__file__).resolve().parents[1]

#: Anonymous callers may not execute jobs: test servers accept this token for executors
#: (group ``executors`` holds ``execute_jobs`` by default), and test executors send it.
TEST_EXECUTOR_TOKEN = "test-executor-token-not-a-secret"
_TEST_EXECUTOR = {
    "user": "test-executor",
    "tokenHash": hash_token(TEST_EXECUTOR_TOKEN),
    "groups": [EXECUTORS],
    "executors": [ANY_EXECUTOR],  # test systems run clusters of many names
}
SERVER_EXECUTOR_TOKEN_ENV = {"ARMADA_AUTH_TOKENS": json.dumps([_TEST_EXECUTOR])}
EXECUTOR_TOKEN_ENV = {"ARMADA_TOKEN": TEST_EXECUTOR_TOKEN}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def armada_command(*args: str, program: Path | None = None) -> list[str]:
    """This work tree's ``armada``, or an installed ``program`` (tests/installed.py)."""
    return [str(program), *args] if program else [sys.executable, "-m", "armada", *args]


def process_env(extra: dict[str, str] | None = None, *, source: bool = True) -> dict[str, str]:
    """The environment of an ``armada`` process: this work tree's package on the path
    (``source``), or nothing of it for an installed command, which must run on its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARMADA_")}
    if source:
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    else:
        env.pop("PYTHONPATH", None)
    env["ARMADA_LOGGING_FORMAT"] = "json"
    env["ARMADA_SERVER_GRPC_PORT"] = "0"  # tests that want gRPC name a free port
    env.update(extra or {})
    return env


class ArmadaProcess:
    """A running ``armada`` subprocess (this work tree's, or an installed ``program``) whose
    output goes to a log file."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        cwd: Path,
        log_path: Path,
        env: dict[str, str] | None = None,
        program: Path | None = None,
    ):
        self.args = list(args)
        self.log_path = log_path
        self._log = log_path.open("ab")
        self.process = subprocess.Popen(
            armada_command(*args, program=program),
            cwd=cwd,
            env=process_env(env, source=program is None),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)

    def wait(self, timeout: float = 30) -> int:
        return self.process.wait(timeout)

    def stop(self, timeout: float = 15) -> int | None:
        """SIGTERM, then SIGKILL if it will not go."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode


def wait_until_healthy(url: str, process: ArmadaProcess, timeout: float = 60, *, logged: str = "") -> None:
    """Wait for ``/health`` at ``url``, served by ``process`` (which logs ``logged``, default ``url``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.process.poll() is not None:
            raise RuntimeError(f"armada exited with {process.process.returncode}:\n{process.log()}")
        try:
            # Our process must say it listens there: a free port can be taken by a neighbour.
            if httpx.get(f"{url}/health", timeout=2).status_code == 204 and (logged or url) in process.log():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} not healthy after {timeout}s:\n{process.log()}")


class Served(Protocol):
    """A server of any kind (a process, or in-process: ``tests/servers.py``), by its URL."""

    url: str


class Server:
    """A running ``armada serve``: its base URL, and its gRPC address if it serves gRPC."""

    def __init__(self, process: ArmadaProcess, url: str, grpc_address: str = "", kind: str = "") -> None:
        self.process = process
        self.url = url
        self.grpc_address = grpc_address
        self.kind = kind  # the database kind, where a fixture chose it


@dataclass(frozen=True)
class Serve:
    """How a module's ``armada serve`` runs (the ``serve`` fixture, as ``settings`` is for
    in-process servers): its flags, its environment, its settings file as a mapping (keys as
    in YAML), and whether it serves gRPC (on a free port)."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    grpc: bool = False


@contextmanager
def served(serve: Serve, kind: str, workdir: Path) -> Iterator[Server]:
    """``serve`` on a fresh database of ``kind``. The in-process executor of ``--dev`` keeps
    its runs under ``workdir``: the default directory is shared by every dev server on the
    machine, and another one would adopt (and stop) this one's jobs."""
    executor = {"process": {"stateDir": str(workdir / "runs")}, **serve.config.get("executor", {})}
    config = {**serve.config, "executor": executor}
    with (
        database_url_for(kind, workdir) as url,
        running_server(
            workdir, *serve.args, database_url=url, env=dict(serve.env), config=config, grpc=serve.grpc
        ) as running,
    ):
        running.kind = kind
        yield running


@contextmanager
def running_server(
    workdir: Path,
    *args: str,
    database_url: str | None = None,
    env: dict[str, str] | None = None,
    port: int | None = None,
    program: Path | None = None,
    config: Mapping[str, Any] | None = None,
    grpc: bool = False,
) -> Iterator[Server]:
    """``armada serve`` on ``port`` (a free one by default; fix it to restart a server in place),
    accepting :data:`TEST_EXECUTOR_TOKEN` from executors; run by ``program`` if given. A
    ``config`` is written beside the log as its settings file, the test token added to its
    tokens (in the environment it would replace them); ``grpc`` serves gRPC on a free port."""
    port = port or free_port()
    command = ["serve", "--port", str(port), *args]
    if config is None:
        env = {**SERVER_EXECUTOR_TOKEN_ENV, **(env or {})}
    else:
        auth = config.get("auth", {})
        auth = {**auth, "tokens": [*auth.get("tokens", []), _TEST_EXECUTOR]}
        path = workdir / f"serve-{port}.yaml"
        path.write_text(yaml.safe_dump({**config, "auth": auth}))
        command += ["--config", str(path)]
    grpc_address = ""
    if grpc:
        grpc_port = free_port()
        command += ["--grpc-port", str(grpc_port)]
        grpc_address = f"127.0.0.1:{grpc_port}"
    if database_url:
        command += ["--database-url", database_url]
    process = ArmadaProcess(
        command, cwd=workdir, log_path=workdir / f"serve-{port}.log", env=env, program=program
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_healthy(url, process)
        yield Server(process, url, grpc_address)
    finally:
        process.stop()
