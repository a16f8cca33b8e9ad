"""Simulated cluster: many nodes, runs that only sleep, for load and scale tests.

Each run is one asyncio timer: ``pending`` and ``running`` at once, then ``succeeded``
or ``failed`` after the time its command's ``sleep`` asks for. Thousands of concurrent
runs cost little more than their timers; node reports are built once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import OrderedDict
from pathlib import Path

import msgspec
import structlog
import yaml

from armada.executor.backend import FoundRun, ObserverSlot, RunObserver, RunStatus
from armada.executor.commands import container_argv, fake_plan
from armada.executor.exposure import simulated_addresses
from armada.executor.log_lines import LogMissing, select, stamp
from armada.executor.settings import FakeNodeTemplate, FakeSettings, IngressSettings
from armada.executor.simulated_cordons import LocalCordons
from armada.model.ids import pod_name
from armada.model.leases import Lease, LogOrder, NodeReport
from armada.model.taints import Taint
from armada.model.wire.logs import LogLine

log = structlog.get_logger(__name__)

#: Runs whose synthetic logs are remembered (start and end times), newest first out.
_LOGS_KEPT = 10_000
#: Most synthetic lines of one run (one per simulated second).
_MAX_LINES = 1000


def load_node_templates(path: str | Path) -> list[FakeNodeTemplate]:
    """Node templates from a YAML (or JSON) file: a list, or ``{"nodeTemplates": [...]}``."""
    data = yaml.safe_load(Path(path).read_text())
    if isinstance(data, dict):
        data = data.get("nodeTemplates", [])
    return msgspec.convert(data, type=list[FakeNodeTemplate])


def make_nodes(settings: FakeSettings, cluster_id: str) -> list[NodeReport]:
    """The simulated nodes: from the templates, else ``nodes`` identical ones."""
    templates = settings.node_templates or [
        FakeNodeTemplate(
            count=settings.nodes,
            allocatable={"cpu": settings.node_cpu, "memory": settings.node_memory},
        )
    ]
    nodes: list[NodeReport] = []
    for index, template in enumerate(templates):
        prefix = template.name_prefix or (f"{cluster_id}-node" if index == 0 else f"{cluster_id}-t{index}")
        taints = [msgspec.convert(t, type=Taint) for t in template.taints]
        for n in range(template.count):
            name = f"{prefix}-{n}"
            nodes.append(
                NodeReport(
                    name=name,
                    labels={**template.labels, "kubernetes.io/hostname": name},
                    taints=taints,
                    allocatable=dict(template.allocatable),
                )
            )
    return nodes


class FakeBackend(LocalCordons):
    """A ``ClusterBackend`` whose runs are timers."""

    def __init__(
        self,
        settings: FakeSettings,
        cluster_id: str,
        *,
        rng: random.Random | None = None,
        ingress: IngressSettings | None = None,
    ) -> None:
        super().__init__()
        self._settings = settings
        self._ingress = ingress or IngressSettings()
        self._nodes = make_nodes(settings, cluster_id)
        self._rng = rng or random.Random()
        self._runs: dict[str, asyncio.Task[None]] = {}
        self._report = ObserverSlot()
        #: Run id → (start, end or None) wall-clock times: what the synthetic log is made of.
        self._spans: OrderedDict[str, tuple[float, float | None]] = OrderedDict()

    async def discover(self) -> list[FoundRun]:
        """A simulated cluster starts empty."""
        return []

    async def start(self, observer: RunObserver) -> None:
        """Remember where to report."""
        self._report.attach(observer)

    async def close(self) -> None:
        """Simulated runs end with the executor."""
        for task in self._runs.values():
            task.cancel()
        await asyncio.gather(*self._runs.values(), return_exceptions=True)
        self._runs.clear()

    async def nodes(self) -> list[NodeReport]:
        """The simulated nodes."""
        return self.cordons_applied(self._nodes)

    async def launch(self, lease: Lease) -> None:
        """Start the run's timer (once per run)."""
        if lease.run_id not in self._runs:
            self._runs[lease.run_id] = asyncio.create_task(self._simulate(lease), name=f"fake-{lease.run_id}")

    async def kill(self, run_id: str) -> None:
        """Stop the timer; the run is gone at once."""
        task = self._runs.pop(run_id, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._report().gone(run_id)

    async def release(self, run_id: str, discard: bool = False) -> None:
        """Nothing is left behind by a simulated run, so ``action: Delete`` changes nothing."""
        self._runs.pop(run_id, None)

    async def read_log(self, order: LogOrder) -> list[LogLine]:
        """Synthetic lines: one per second the run has run (simulated seconds at ``speed``)."""
        span = self._spans.get(order.run_id)
        if span is None:
            raise LogMissing(f"the simulated cluster does not remember run {order.run_id}")
        start, end = span
        seconds = ((end or time.time()) - start) * self._settings.speed
        lines = [
            LogLine(timestamp=stamp(start + i / self._settings.speed), line=f"{order.job_id} second {i}")
            for i in range(min(int(seconds) + 1, _MAX_LINES))
        ]
        return select(lines, order)

    async def _simulate(self, lease: Lease) -> None:
        observer = self._report()
        plan = fake_plan(
            container_argv(lease.pod_spec),
            default_seconds=self._settings.default_run_seconds,
            rng=self._rng,
        )
        base = RunStatus(
            run_id=lease.run_id, kind="pending", node=lease.node, pod_name=pod_name(lease.job_id)
        )
        await observer.observe(base)
        await observer.observe(msgspec.structs.replace(base, kind="running"))
        started = time.time()
        self._spans[lease.run_id] = (started, None)
        if len(self._spans) > _LOGS_KEPT:
            self._spans.popitem(last=False)
        addresses = simulated_addresses(lease, lease.node, self._ingress)
        if addresses:
            await observer.observe(
                msgspec.structs.replace(base, kind="ingressInfo", ingress_addresses=addresses)
            )
        await asyncio.sleep(plan.seconds / self._settings.speed)
        if lease.run_id in self._spans:  # the simulated run lasted exactly its plan
            self._spans[lease.run_id] = (started, started + plan.seconds / self._settings.speed)
        if plan.exit_code == 0:
            await observer.observe(msgspec.structs.replace(base, kind="succeeded", exit_code=0))
        else:
            failed = msgspec.structs.replace(
                base,
                kind="failed",
                exit_code=plan.exit_code,
                reason=f"exit code {plan.exit_code}",
                cause="Error",
                run_attempted=True,
            )
            await observer.observe(failed)
        self._runs.pop(lease.run_id, None)
