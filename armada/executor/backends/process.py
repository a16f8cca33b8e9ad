"""Local cluster of one node: each run is a subprocess of this host (no images).

The first container's ``command + args`` (just ``args`` when there is no command) is run
as one *simple command of a POSIX shell*: ``( cd "$workdir" && "$@" )``. Words are passed as they are (no
re-splitting or globbing), but a shell builtin works as the command name, so
``args: ["exit", "1"]`` fails with exit code 1 and ``["sleep", "100s"]`` just sleeps.
That wrapper shell then appends the exit code to the run's record, so the result
survives an executor restart. The run's stdout and stderr go through a pipe to the
executor's one log stamper (``output_pipes.py``, ``log_stamp.py``), which stamps each line
with its time and caps the kept output at ``process.logMaxBytes``; a finished run's output
is kept ``process.logRetentionSeconds`` for log reads. Each run
gets its own session (process group), which is what cancel and preempt kill, first with
SIGTERM and, after a grace period, SIGKILL.
Each run also gets a random ``RANDOM`` variable, so that scripts written for bash such as
``sh -c 'sleep $(( (RANDOM % 60) + 10 ))'`` also work where ``/bin/sh`` is dash.
With ``process.runAsUser`` the wrapper shell stays the executor's (root) and the command
alone runs as that user (``process_isolation.py``, ``run_as.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import random
import signal
import socket
import time
from dataclasses import dataclass, field

import msgspec
import structlog

from armada.executor.backend import FoundRun, ObserverSlot, RunObserver, RunStatus
from armada.executor.backends.children import Child, spawn
from armada.executor.backends.output_pipes import OutputPipes
from armada.executor.backends.process_isolation import env_descriptor, resolve_run_as
from armada.executor.backends.process_state import RunDir, prepare_root, run_dirs, state_root
from armada.executor.commands import container_argv, first_container
from armada.executor.env import container_env, expand_refs
from armada.executor.log_lines import LogMissing, newest_needed, parse, select
from armada.executor.settings import ProcessSettings
from armada.executor.simulated_cordons import LocalCordons
from armada.model.ids import pod_name
from armada.model.ingress import exposed_ports
from armada.model.leases import FailureCause, Lease, LogOrder, NodeReport
from armada.model.wire.logs import LogLine

log = structlog.get_logger(__name__)

_WRAPPER = 'f=$1; d=$2; shift 2; ( cd "$d" && "$@" ); rc=$?; echo "exit $rc" >> "$f"; exit "$rc"'
_POLL_SECONDS = 0.5
#: How long a run's end, or its kill before removing its directory, waits for the stamper
#: to write its last output (a process that left a child behind holding its stdout open
#: would otherwise hold the result back).
_DRAIN_SECONDS = 2.0
#: Where a run's exposed ports are reached: its process listens on this host.
_LOCAL_HOST = "127.0.0.1"


def host_capacity() -> dict[str, str]:
    """This host's CPUs and physical memory as Kubernetes quantities."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": str(os.cpu_count() or 1), "memory": str(memory)}


def inherited_env() -> dict[str, str]:
    """The executor's environment minus its own ``ARMADA_*`` settings (tokens stay private)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ARMADA_")}


@dataclass
class LocalRun:
    """A run this backend is responsible for."""

    lease: Lease
    dir: RunDir
    pid: int | None = None
    process: Child | None = None
    watcher: asyncio.Task[None] | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)


class ProcessBackend(LocalCordons):
    """A ``ClusterBackend`` running jobs as local processes."""

    def __init__(self, settings: ProcessSettings, cluster_id: str, retention_seconds: float) -> None:
        super().__init__()
        self._settings = settings
        self._root = state_root(settings, cluster_id)
        self._retention = retention_seconds
        self._run_as = resolve_run_as(settings.run_as_user)
        prepare_root(self._root, shared=self._run_as is not None)
        self._env = self._run_as.job_env() if self._run_as else inherited_env()
        if self._run_as is None and os.geteuid() == 0:
            log.warning(
                "process backend runs jobs as root: every job can read and change anything on this host",
                hint="set executor.process.runAsUser to an unprivileged user (docs/security.md)",
            )
        self._node_name = settings.node_name or socket.gethostname()
        capacity = host_capacity()
        self._node = NodeReport(
            name=self._node_name,
            labels={"kubernetes.io/hostname": self._node_name},
            allocatable={
                "cpu": settings.cpu or capacity["cpu"],
                "memory": settings.memory or capacity["memory"],
            },
        )
        self._runs: dict[str, LocalRun] = {}
        self._report = ObserverSlot()
        self._output = OutputPipes(self._root)
        self._sweeper: asyncio.Task[None] | None = None

    async def discover(self) -> list[FoundRun]:
        """Runs in the state directory whose results were never delivered."""
        found = []
        for run_dir in run_dirs(self._root):
            lease = run_dir.lease()
            if lease is None or run_dir.released:
                continue
            run = LocalRun(lease=lease, dir=run_dir, pid=run_dir.live_pid())
            self._runs[lease.run_id] = run
            found.append(FoundRun(run_id=lease.run_id, job_id=lease.job_id, phase="running"))
        return found

    async def start(self, observer: RunObserver) -> None:
        """Follow adopted runs and start sweeping old run directories."""
        self._report.attach(observer)
        for run in self._runs.values():
            # Its ingressInfo may not have got out before the restart (the server keeps one).
            await self._report_exposure(run.lease)
            run.watcher = asyncio.create_task(self._watch(run))
        self._sweeper = asyncio.create_task(self._sweep())

    async def close(self) -> None:
        """Stop following runs; their processes carry on in their own sessions."""
        tasks = [t for t in (self._sweeper, *(r.watcher for r in self._runs.values())) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._output.close()

    async def nodes(self) -> list[NodeReport]:
        """The one local node."""
        return self.cordons_applied([self._node])

    async def launch(self, lease: Lease) -> None:
        """Spawn the run's process in a new session (once per run)."""
        run_dir = RunDir.of(self._root, lease.run_id)
        if lease.run_id in self._runs or run_dir.path.exists():
            return
        run = LocalRun(lease=lease, dir=run_dir)
        self._runs[lease.run_id] = run
        container = first_container(lease.pod_spec)
        owner = (self._run_as.uid, self._run_as.gid) if self._run_as else None
        run_dir.create(lease, own_work="workingDir" not in container, owner=owner)
        name = pod_name(lease.job_id)
        env = container_env(container, lease, pod_name=name, node=self._node_name)
        argv = [expand_refs(word, env) for word in container_argv(lease.pod_spec)]
        cwd = container.get("workingDir") or str(run_dir.work)
        base = RunStatus(run_id=lease.run_id, kind="pending", node=self._node_name, pod_name=name)
        await self._report().observe(base)
        try:
            run.process = await self._spawn(run_dir, argv, cwd, env)
        except OSError as exc:  # e.g. a workingDir that does not exist: retrying will not help
            reason = f"cannot start process: {exc}"
            await self._report().observe(
                msgspec.structs.replace(base, kind="failed", reason=reason, cause="Error")
            )
            return
        run.pid = run.process.pid
        run_dir.record_pid(run.pid, run.process.started)
        log.info("process started", run_id=lease.run_id, job_id=lease.job_id, pid=run.pid, argv=argv)
        await self._report().observe(msgspec.structs.replace(base, kind="running"))
        await self._report_exposure(lease)
        run.watcher = asyncio.create_task(self._watch(run))

    async def _report_exposure(self, lease: Lease) -> None:
        """The run's ``ingressInfo``: its process listens on this host, so each exposed port
        is reached at the host's port of the same number."""
        ports = exposed_ports(lease.services, lease.ingress)
        if ports:
            addresses = {port: f"{_LOCAL_HOST}:{port}" for port in ports}
            await self._report().observe(
                RunStatus(
                    run_id=lease.run_id,
                    kind="ingressInfo",
                    node=self._node_name,
                    pod_name=pod_name(lease.job_id),
                    pod_ip=_LOCAL_HOST,
                    ingress_addresses=addresses,
                )
            )

    async def _spawn(self, run_dir: RunDir, argv: list[str], cwd: str, env: dict[str, str]) -> Child:
        """Start the wrapper shell in its own session, its output (both streams) into a pipe
        to the log stamper. With ``runAsUser`` the wrapper (root) gets an empty environment
        and drops to the user for the command alone, its environment passed on a descriptor."""
        if not os.path.isdir(cwd):  # noqa: ASYNC240 - one stat, cheaper than the spawn it spares
            raise FileNotFoundError(errno.ENOENT, "no such working directory", cwd)
        output = await self._output.open(run_dir.path.name, run_dir.output, self._settings.log_max_bytes)
        env = {**self._env, "RANDOM": str(random.randrange(32768)), **env}
        wrapper = ["/bin/sh", "-c", _WRAPPER, "armada-run", str(run_dir.record), cwd]
        try:
            if self._run_as is None:
                return spawn([*wrapper, *(argv or ["true"])], env, output)
            env_fd = env_descriptor(env)
            try:
                return spawn([*wrapper, *self._run_as.helper_argv(), *(argv or ["true"])], {}, output, env_fd)
            finally:
                os.close(env_fd)
        finally:
            os.close(output)

    async def read_log(self, order: LogOrder) -> list[LogLine]:
        """The run's stamped output, selected as ``order`` asks."""
        run = self._runs.get(order.run_id)
        run_dir = run.dir if run is not None else RunDir.of(self._root, order.run_id)
        lease = run.lease if run is not None else run_dir.lease()
        if lease is None:
            raise LogMissing(f"run {order.run_id} has no output here (deleted after its retention period)")
        if order.previous:
            raise LogMissing("a process run has no previous container")
        name = first_container(lease.pod_spec).get("name", "")
        if order.container and order.container != name:
            raise LogMissing(f"the process backend runs only the first container, {name!r}")
        window = min(newest_needed(order) or self._settings.log_max_bytes, self._settings.log_max_bytes)
        return await asyncio.to_thread(_selected_lines, run_dir, window, order)

    async def kill(self, run_id: str) -> None:
        """Kill the run's process group (TERM, then KILL after the grace period), then
        remove its directory once the stamper is done with it."""
        run = self._runs.pop(run_id, None)
        if run is not None:
            if run.watcher is not None:
                run.watcher.cancel()
            run.pid = run.pid or run.dir.live_pid()
            if run.pid is not None and not run.exited.is_set():
                _signal_group(run.pid, signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._grace(run.lease)):
                        await self._wait_exit(run)
                _signal_group(run.pid, signal.SIGKILL)
                await self._wait_exit(run)
                await self._wait_group_gone(run.pid)
            # The stamper may not have taken the run's pipe yet: when it does, it creates the
            # run's output, which, landing while the directory was being removed, left it
            # "not empty". Its answer (pipe and output closed) means it is done with it.
            await self._output.drained(run.dir.path.name, _DRAIN_SECONDS)
            run.dir.remove()
        else:
            run_dir = RunDir.of(self._root, run_id)
            if (pid := run_dir.live_pid()) is not None:
                _signal_group(pid, signal.SIGKILL)
            run_dir.remove()
        await self._report().gone(run_id)

    async def release(self, run_id: str, discard: bool = False) -> None:
        """Keep the run's directory (output) for the retention period; a failure whose
        category says ``action: Delete`` (``discard``) removes it at once."""
        run = self._runs.pop(run_id, None)
        run_dir = run.dir if run is not None else RunDir.of(self._root, run_id)
        if discard or (self._retention <= 0 and self._settings.log_retention_seconds <= 0):
            run_dir.remove()
        elif run_dir.path.exists():
            run_dir.mark_released()

    def _grace(self, lease: Lease) -> float:
        """The pod's ``terminationGracePeriodSeconds``, else the configured grace."""
        grace = lease.pod_spec.get("terminationGracePeriodSeconds")
        return float(grace) if grace is not None else self._settings.kill_grace_seconds

    async def _wait_group_gone(self, pgid: int) -> None:
        """Wait (bounded) for the group's other members: SIGKILL takes effect asynchronously."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._settings.kill_grace_seconds):
                while _group_exists(pgid):  # noqa: ASYNC110 - the kernel offers nothing to wait on
                    await asyncio.sleep(0.02)

    async def _wait_exit(self, run: LocalRun) -> None:
        if run.process is not None:
            await run.process.wait()
        else:
            # Not our child (adopted after a restart): nothing to wait on but the pid.
            while run.pid is not None and run.dir.live_pid() is not None:  # noqa: ASYNC110
                await asyncio.sleep(_POLL_SECONDS)
        run.exited.set()

    async def _watch(self, run: LocalRun) -> None:
        """Wait for the run's end (or deadline) and report how it ended."""
        deadline = run.lease.pod_spec.get("activeDeadlineSeconds")
        started = run.dir.started_at() or time.time()
        remaining = max(0.0, float(deadline) - (time.time() - started)) if deadline else None
        try:
            async with asyncio.timeout(remaining):
                await self._wait_exit(run)
        except TimeoutError:
            assert run.pid is not None
            _signal_group(run.pid, signal.SIGKILL)
            await self._wait_exit(run)
            await self._output.drained(run.dir.path.name, _DRAIN_SECONDS)
            await self._finish(run, None, reason="DeadlineExceeded", cause="DeadlineExceeded")
            return
        await self._output.drained(run.dir.path.name, _DRAIN_SECONDS)
        code = run.dir.exit_code()
        if code is None and run.process is not None and run.process.returncode is not None:
            code = run.process.returncode
        await self._finish(run, code)

    async def _finish(
        self, run: LocalRun, code: int | None, *, reason: str = "", cause: FailureCause = ""
    ) -> None:
        base = RunStatus(
            run_id=run.lease.run_id,
            kind="succeeded",
            node=self._node_name,
            pod_name=pod_name(run.lease.job_id),
            exit_code=code,
            run_attempted=True,
        )
        if code == 0 and not cause:
            await self._report().observe(base)
            return
        if code is not None and code < 0:
            code = 128 - code
        if not reason:
            reason = f"exit code {code}" if code is not None else "process lost while the executor was down"
        failed = msgspec.structs.replace(
            base,
            kind="failed",
            exit_code=code,
            reason=reason,
            cause=cause or "Error",
            log_tail=run.dir.log_tail(),
            retryable=code is None,
        )
        await self._report().observe(failed)

    async def _sweep(self) -> None:
        """Delete what finished runs leave once its retention period is over: the working
        directory after ``finishedRunRetentionSeconds``, the output (for log reads) after
        ``process.logRetentionSeconds``."""
        keep_output = max(self._retention, self._settings.log_retention_seconds)
        while True:
            await asyncio.to_thread(self._sweep_once, keep_output)
            await asyncio.sleep(max(1.0, min(self._retention, 60.0)))

    def _sweep_once(self, keep_output: float) -> None:
        """One pass over every run directory kept (in a thread: tens of thousands of them
        are a second of file system calls the event loop must not wait for)."""
        for run_dir in run_dirs(self._root):
            since = run_dir.released_since()
            if since is None:
                continue
            if time.time() - since >= keep_output:
                run_dir.remove()
            elif time.time() - since >= self._retention:
                run_dir.remove_work()


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _selected_lines(run_dir: RunDir, window: int, order: LogOrder) -> list[LogLine]:
    """Read, parse and select off the event loop: a megabyte of log takes tens of
    milliseconds, which every other request would otherwise wait for."""
    return select(parse(run_dir.log_text(window)), order)
