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
from armada.scheduling.requirements import JobRequirements, RequirementsError, Toleration, job_requirements


class _Executor(Protocol):
    @property
    def nodes(self) -> Mapping[str, ExecutorNode]: ...


class _Nodes(Protocol):
    def could_hold(
        self,
        job: JobRequirements,
        pool_tolerations: Mapping[str, tuple[Toleration, ...]] | None = None,
        floating: Mapping[str, Mapping[str, int]] | None = None,
    ) -> bool: ...


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
    fenced: dict[str, Job] = {}
    for run in on_nodes:
        job = specs.get(run.job_id)
        if job is None or job.gang_cardinality > 1:
            continue
        executor = state.executors.get(run.executor)
        node = executor.nodes.get(run.node) if executor is not None else None
        node_labels = {NODE_NAME_LABEL: run.node, **(node.labels if node is not None else {})}
        changed = avoid_node_labels(
            job, {label: node_labels[label] for label in labels if label in node_labels}
        )
        if changed is not None and _could_run(state, changed):
            fenced[run.job_id] = changed
    return fenced


def _could_run(state: KnownNodes, job: Job) -> bool:
    try:
        config = state.config
        return state.nodes.could_hold(
            job_requirements(job, submitted=0.0),
            config.default_tolerations_by_pool(),
            config.floating_by_pool(),
        )
    except (RequirementsError, ValueError):
        return False
