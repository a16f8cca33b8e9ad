"""Upgrades from the previous release (:mod:`tests.previous_version`) on PostgreSQL.

Rolling: two replicas of the previous version and its process executor serve a steady load;
replica 1 is replaced by this version (which migrates the database as it starts), then
replica 2, then the executor. Every accepted submission completes exactly once, a watcher
resumes across the restarts without gaps or duplicates, no request fails except with a
retryable error at a replica during its own restart, and ``armada admin check`` is clean.

Stopped: the previous version's database, upgraded with ``armada admin migrate`` while
nothing runs, serves this version with its jobs.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import armada
from armada.client import ArmadaApiError, ArmadaClient
from armada.eventstore import migrate
from armada.model.leases import EXECUTOR_PROTOCOL
from armada.model.queues import Queue
from tests.databases import postgres_database
from tests.e2e.cluster import FAST_SERVER_ENV, executor, job, wait_for
from tests.previous_version import PREVIOUS_VERSION, PreviousVersion, previous_version
from tests.processes import Server, armada_command, free_port, process_env, running_server

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

QUEUE, JOB_SET = "rolling", "steady"
#: Statuses a client retries elsewhere: the replica it asked is going away or not up yet.
RETRYABLE = {502, 503, 504}
EXECUTOR_ARGS = ("--process-cpu", "8", "--process-memory", "8Gi")
#: A replica's restart must not expire the leases of the executor it serves (in production
#: executors reach any replica through a Service, and wait 60 s by default).
SERVER_ENV = {**FAST_SERVER_ENV, "ARMADA_SCHEDULER_EXECUTOR_TIMEOUT": "30"}
#: 0.9.0 holds a stopping replica while a watch stream is open, for its whole grace period
#: (10 s by default; 0.10.0 ends the streams at once): shortened to keep the test short.
PREVIOUS_SERVER_ENV = {"ARMADA_SERVER_SHUTDOWN_TIMEOUT": "2"}
#: Executors retry at least every second while their replica restarts.
EXECUTOR_ENV = {"ARMADA_EXECUTOR_RETRY_MAX_SECONDS": "1"}


class Replicas:
    """Two server processes on fixed ports, each replaceable in place by another version."""

    def __init__(self, workdir: Path, database_url: str, stack: ExitStack) -> None:
        self.workdir, self.database_url, self.stack = workdir, database_url, stack
        self.ports = [free_port(), free_port()]
        self.urls = [f"http://127.0.0.1:{port}" for port in self.ports]
        self.servers: list[ExitStack] = [ExitStack(), ExitStack()]
        self.running: list[Server | None] = [None, None]
        #: Replicas being replaced: errors there are the retryable kind a client expects.
        self.restarting: set[int] = set()

    def start(self, index: int, previous: PreviousVersion | None) -> None:
        server = running_server(
            self.workdir,
            database_url=self.database_url,
            env={**SERVER_ENV, **(PREVIOUS_SERVER_ENV if previous else {})},
            port=self.ports[index],
            program=previous.armada if previous else None,
        )
        self.running[index] = self.servers[index].enter_context(server)

    def replace(self, index: int, previous: PreviousVersion | None) -> None:
        self.restarting.add(index)
        try:
            self.servers[index].close()
            self.start(index, previous)
        finally:
            self.restarting.discard(index)

    def close(self) -> None:
        for server in self.servers:
            server.close()


class Load:
    """Submits a job every 50 ms to the replicas in turn; a refused request is retried at the
    other replica only when the one asked is restarting, and is a failure otherwise."""

    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas
        self.accepted: list[str] = []
        self.failures: list[str] = []
        self.retried: Counter[int] = Counter()
        self.stopping = threading.Event()
        self._turn = itertools.count()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._thread.join(60)

    def steady(self, jobs: int = 20) -> None:
        """Wait for ``jobs`` more accepted submissions."""
        count = len(self.accepted)
        wait_for(lambda: len(self.accepted) >= count + jobs, what=f"{jobs} more submissions")

    def _run(self) -> None:
        while not self.stopping.is_set():
            self._submit()
            time.sleep(0.05)

    def _submit(self) -> None:
        for _attempt in range(100):
            index = next(self._turn) % 2
            try:
                with ArmadaClient(self.replicas.urls[index]) as client:
                    self.accepted += client.submit_jobs(QUEUE, JOB_SET, [job("sleep 0.2", cpu="100m")])
                return
            except (httpx.TransportError, ArmadaApiError) as exc:
                status = getattr(exc, "status", None)
                if index in self.replicas.restarting and (status is None or status in RETRYABLE):
                    self.retried[index] += 1
                    time.sleep(0.05)
                    continue
                self.failures.append(f"replica {index + 1}: {exc!r}")
                return


class Watcher:
    """Follows the job set, resuming from the last message id at the other replica whenever
    its stream ends; a stream may end only while its replica is being replaced."""

    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas
        self.seen: list[tuple[str, str, str]] = []
        self.resumed = 0
        self.unexpected: list[str] = []
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop resuming (call before the replicas stop: their closing ends the stream)."""
        self.stopping.set()

    def _run(self) -> None:
        for index in itertools.cycle(range(2)):
            last = self.seen[-1][0] if self.seen else ""
            ended = "ended"
            try:
                with ArmadaClient(self.replicas.urls[index]) as client:
                    for message in client.job_set_events(QUEUE, JOB_SET, watch=True, from_message_id=last):
                        self.seen.append((message.message_id, message.event.type, message.event.job_id))
            except (httpx.TransportError, ArmadaApiError) as exc:
                ended = repr(exc)
            if self.stopping.is_set():
                return
            if index not in self.replicas.restarting:
                self.unexpected.append(f"replica {index + 1}: {ended}")
            self.resumed += 1
            time.sleep(0.1)


def _checked_after_upgrade(url: str) -> subprocess.CompletedProcess[str]:
    """``armada admin check`` after an upgrade, clean. Runs the old version ended were not
    counted in the usage rollups (they predate them): the check says so, and one rebuild —
    the upgrade note's last step — counts them."""
    check = _admin(None, "check", "--database-url", url)
    assert check.returncode == 0, check.stdout + check.stderr
    if not check.stdout.startswith("ok"):
        assert "usage rollup" in check.stdout and "rebuild-views" in check.stdout, check.stdout
        rebuilt = _admin(None, "rebuild-views", "--database-url", url)
        assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
        check = _admin(None, "check", "--database-url", url)
        assert check.returncode == 0 and check.stdout.startswith("ok"), check.stdout + check.stderr
    return check


def _admin(previous: PreviousVersion | None, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        armada_command("admin", *args, program=previous.armada if previous else None),
        env=process_env(source=previous is None),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@contextmanager
def _previous() -> Iterator[PreviousVersion]:
    try:
        yield previous_version()
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"cannot set up the previous version {PREVIOUS_VERSION}: {exc}\n{exc.stderr}")


def test_rolling_upgrade_from_the_previous_version(tmp_path: Path) -> None:
    with _previous() as previous, postgres_database() as url, ExitStack() as stack:
        replicas = Replicas(tmp_path, url, stack)
        stack.callback(replicas.close)
        replicas.start(0, previous)
        replicas.start(1, previous)
        executor_stack = stack.enter_context(ExitStack())
        state = ("--process-state-dir", str(tmp_path / "process-state"))
        run_on = replicas.urls[0]
        executor_stack.enter_context(executor(tmp_path, run_on, "local", **process_backend(previous, state)))
        with ArmadaClient(replicas.urls[0]) as client:
            client.create_queue(Queue(name=QUEUE))
        watcher = Watcher(replicas)
        with Load(replicas) as load:
            for replaced in (0, 1):
                load.steady()
                replicas.replace(replaced, None)
            load.steady()
            executor_stack.close()
            executor_stack.enter_context(executor(tmp_path, run_on, "local", **process_backend(None, state)))
            load.steady()

        assert load.failures == []
        with ArmadaClient(replicas.urls[1]) as client:
            wait_for(
                lambda: set(client.job_status(load.accepted).values()) == {"SUCCEEDED"},
                timeout=120,
                what="every accepted job to succeed",
            )
            stream = client.job_set_events(QUEUE, JOB_SET)
            events = [(m.message_id, m.event.type, m.event.job_id) for m in stream]
            wait_for(lambda: len(watcher.seen) >= len(events), what="the watcher to catch up")
            for replica in replicas.urls:
                version = httpx.get(f"{replica}/v1/version").json()
                assert (version["version"], version["schemaRevision"]) == (armada.__version__, migrate.head())
        watcher.stop()
        assert watcher.seen[: len(events)] == events  # resumed without gaps or duplicates
        assert watcher.unexpected == []
        assert watcher.resumed >= 2  # once per replica replaced, at least
        succeeded = Counter(job_id for _, kind, job_id in events if kind == "succeeded")
        assert set(succeeded) == set(load.accepted) and set(succeeded.values()) == {1}
        runs = Counter(job_id for _, kind, job_id in events if kind == "leased")
        again = {job: [kind for _, kind, of in events if of == job] for job, n in runs.items() if n > 1}
        assert not again, again  # one run each: no lease expired or returned
        # The executor's replica met it at both versions: 0.9.0's calls name none (protocol 1).
        serving = replicas.running[0]
        assert serving is not None
        lines = serving.process.log().splitlines()
        met = [json.loads(line) for line in lines if '"executor version"' in line]
        assert [(line["version"], line["protocol"]) for line in met] == [
            ("0.9.0 or older", 1),
            (armada.__version__, EXECUTOR_PROTOCOL),
        ]
        replicas.close()
        executor_stack.close()
        check = _checked_after_upgrade(url)
        # The previous version runs on, but cannot start again on, the database migrated past it.
        refused = _admin(previous, "migrate", "--database-url", url)
        assert refused.returncode != 0 and "newer than this armada" in refused.stderr, refused.stderr
        print(  # the figures the closing note of an upgrade reports
            f"accepted {len(load.accepted)} jobs, each succeeded once with one run; retried during "
            f"restarts: {dict(load.retried)}; watcher resumed {watcher.resumed} times over {len(events)} "
            f"events; admin check: {check.stdout.strip()}; previous version on the migrated database: "
            f"{refused.stderr.strip().splitlines()[-1]}"
        )


def process_backend(previous: PreviousVersion | None, args: tuple[str, ...] = ()) -> dict[str, Any]:
    """:func:`executor`'s arguments for a process executor (of the previous version if given)."""
    program = {"program": previous.armada} if previous else {}
    return {"backend": "process", "args": (*EXECUTOR_ARGS, *args), "env": EXECUTOR_ENV, **program}


def test_stopped_upgrade_with_admin_migrate(tmp_path: Path) -> None:
    with _previous() as previous, postgres_database() as url:
        assert _admin(previous, "migrate", "--database-url", url).returncode == 0
        with (
            running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV, program=previous.armada) as old,
            ArmadaClient(old.url) as client,
        ):
            client.create_queue(Queue(name=QUEUE))
            done = client.submit_jobs(QUEUE, JOB_SET, [job("true", cpu="100m")])
            with executor(tmp_path, old.url, "local", **process_backend(previous)):
                wait_for(lambda: client.job_status(done)[done[0]] == "SUCCEEDED", what="the job to succeed")
            waiting = client.submit_jobs(QUEUE, JOB_SET, [job("true", cpu="100m")])
            old.process.signal(signal.SIGTERM)
            assert old.process.wait(30) == 0

        migrated = _admin(None, "migrate", "--database-url", url)
        assert migrated.returncode == 0, migrated.stderr
        assert migrated.stdout.strip() == f"database schema is up to date (revision {migrate.head()})"
        with (
            running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV) as new,
            ArmadaClient(new.url) as client,
        ):
            with executor(tmp_path, new.url, "local", **process_backend(None)):
                wait_for(lambda: client.job_status(waiting)[waiting[0]] == "SUCCEEDED", what="the queued job")
            assert client.job_status(done)[done[0]] == "SUCCEEDED"
        _checked_after_upgrade(url)
