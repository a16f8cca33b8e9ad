"""Requeued jobs keep off the nodes their runs failed on (upstream's ``avoidNodeLabelsOnRetry``).

When a run ends without a result on a node (the lease returned after the pod started, the
lease expired, the node was lost, the run vanished from its executor) and the job is
requeued, the job gets a ``NotIn`` node affinity on each of ``scheduler.avoidNodeLabelsOnRetry``
with that node's value (by default its name), through the same mutation the retry policies'
``avoidSameNode`` uses: the requeue event carries the changed job, so the scheduler, the job's
details and the pod all see the fence. The fence is only added when some other node could
still hold the job (upstream fails the job instead; here it retries unchanged). Gang members
are left as they are: one member's fence would split the gang's scheduling key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import views
from armada.eventstore.unreadable import UnreadableRecords
from armada.model.events import ExecutorNode
from armada.model.jobs import Job
from armada.model.retry_mutation import NODE_NAME_LABEL, avoid_node_labels
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.nodes import BoolArray
from armada.scheduling.requirements import JobRequirements, RequirementsError, Toleration, job_requirements


class _Executor(Protocol):
    @property
    def nodes(self) -> Mapping[str, ExecutorNode]: ...


class _Nodes(Protocol):
    def holding(
        self,
        job: JobRequirements,
        pool_tolerations: Mapping[str, tuple[Toleration, ...]] | None = None,
        floating: Mapping[str, Mapping[str, int]] | None = None,
    ) -> BoolArray: ...

    def label_equals(self, key: str, value: str) -> BoolArray: ...


class KnownNodes(Protocol):
    """What avoidance reads of the scheduler's cluster state: each executor's nodes, and
    whether any node could hold a job."""

    @property
    def executors(self) -> Mapping[str, _Executor]: ...

    @property
    def nodes(self) -> _Nodes: ...

    @property
    def config(self) -> SchedulingConfig: ...


class EndedRun(NamedTuple):
    """A run that ended without a result, and where it ran."""

    job_id: str
    executor: str
    node: str


async def avoiding_jobs(
    conn: AsyncConnection,
    state: KnownNodes,
    unreadable: UnreadableRecords,
    ended: Sequence[EndedRun],
    labels: Sequence[str],
) -> dict[str, Job]:
    """The requeued jobs fenced off their failed nodes, by job id (missing: retry unchanged)."""
    on_nodes = [run for run in ended if run.node]
    if not labels or not on_nodes:
        return {}
    specs = await views.job_specs(conn, [run.job_id for run in on_nodes], unreadable)
    holders = _Holders(state)
    fenced: dict[str, Job] = {}
    for run in on_nodes:
        job = specs.get(run.job_id)
        if job is None or job.gang_cardinality > 1:
            continue
        executor = state.executors.get(run.executor)
        node = executor.nodes.get(run.node) if executor is not None else None
        node_labels = {NODE_NAME_LABEL: run.node, **(node.labels if node is not None else {})}
        avoided = {label: node_labels[label] for label in labels if label in node_labels}
        changed = avoid_node_labels(job, avoided)
        if changed is not None and holders.could_run(job, avoided):
            fenced[run.job_id] = changed
    return fenced


class _Holders:
    """Whether a job fenced off some label values could still run somewhere, for many jobs.

    The fence adds ``NotIn`` to every term of the job's node affinity, so the fenced job
    fits exactly the nodes that fit the job as it is and lack those values. The nodes that
    could hold the job are found once per scheduling key (a lost executor's thousands of
    runs share a few), not once per run: each search reads every node (~3 ms at 50,000).
    """

    def __init__(self, state: KnownNodes) -> None:
        self._state = state
        self._holding: dict[object, BoolArray] = {}

    def could_run(self, job: Job, avoided: Mapping[str, str]) -> bool:
        try:
            requirements = job_requirements(job, submitted=0.0)
            key = requirements.key("")
            mask = self._holding.get(key)
            if mask is None:
                config, nodes = self._state.config, self._state.nodes
                mask = nodes.holding(
                    requirements, config.default_tolerations_by_pool(), config.floating_by_pool()
                )
                self._holding[key] = mask
        except (RequirementsError, ValueError):
            return False
        for label, value in avoided.items():
            mask = mask & ~self._state.nodes.label_equals(label, value)
        return bool(mask.any())
