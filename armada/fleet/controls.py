"""The operators' fleet controls: executor settings (cordon), node cordons, forgetting a
vanished executor, and the executor list.

Every change is one event (applied by every replica's log follower, so the scheduler and
the lease service of every replica see it at once). Preempt and cancel on an executor or a
node are bulk commands: :mod:`armada.fleet.bulk_actions`.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import fleet_views
from armada.eventstore.store import EventStore
from armada.model import events as ev
from armada.model.errors import Conflict, InvalidRequest, NotFound
from armada.model.lifecycle import FailureCause
from armada.model.wire.fleet import ExecutorList, ExecutorSettingsUpsertRequest, ExecutorSummary, NodeSummary
from armada.scheduler.cluster_state import RunInfo
from armada.scheduler.loop import SchedulerService
from armada.scheduler.lost_runs import LostRun

FORGOTTEN = "executor forgotten by an operator"


def check_name(path: str, body: str) -> None:
    """The name in the path is the one acted on; a body that names another is a mistake."""
    if not path:
        raise InvalidRequest("a name is required", field="name")
    if body and body != path:
        raise InvalidRequest(f"body names {body!r} but the path names {path!r}", field="name")


async def upsert_executor_settings(
    store: EventStore, name: str, request: ExecutorSettingsUpsertRequest, user: str
) -> None:
    """Cordon (no new leases; running jobs go on) or uncordon an executor, known yet or not."""
    check_name(name, request.name)
    if request.cordon_reason and not request.cordoned:
        raise InvalidRequest("a cordon reason needs cordoned: true", field="cordonReason")
    event = ev.ExecutorSettingsUpserted(
        executor_id=name, cordoned=request.cordoned, cordon_reason=request.cordon_reason, requestor=user
    )
    await store.append([event])


async def delete_executor_settings(store: EventStore, name: str, user: str) -> None:
    """Forget an executor's settings (it is uncordoned); 404 when it has none."""
    check_name(name, "")
    async with store.transaction() as tx:
        found = await fleet_views.cordons(await tx.views(jobs=False))
        if name not in found.executors:
            raise NotFound(f"executor {name!r} has no settings", field="name")
        tx.append([ev.ExecutorSettingsDeleted(executor_id=name, requestor=user)])


async def cordon_node(
    store: EventStore, node: str, *, executor: str = "", cordoned: bool = True, reason: str = "", user: str
) -> str:
    """Cordon (or uncordon) a node; return the executor that owns it.

    Upstream's ``binoculars.Cordon`` names the node only: ``executor`` may then be left out
    when exactly one executor reported a node of that name. The scheduler places nothing
    there from the next cycle; the executor cordons the node in its cluster on its next
    lease call (``cordonNodes`` in the lease response).
    """
    if not node:
        raise InvalidRequest("a node name is required", field="nodeName")
    if reason and not cordoned:
        raise InvalidRequest("uncordoning takes no reason", field="reason")
    async with store.transaction() as tx:
        executor = await node_owner(await tx.views(jobs=False), node, executor, field="nodeName")
        tx.append(
            [
                ev.NodeCordonChanged(
                    executor_id=executor, node=node, cordoned=cordoned, reason=reason, requestor=user
                )
            ]
        )
    return executor


async def node_owner(conn: AsyncConnection, node: str, executor: str = "", *, field: str) -> str:
    """The executor of ``node``: ``executor`` if it has such a node, or, left out, the one
    executor that reported a node of that name (node names are unique per cluster only)."""
    owners = await fleet_views.executors_with_node(conn, node)
    if executor and executor not in owners:
        raise NotFound(f"executor {executor!r} has no node {node!r}", field=field)
    if executor:
        return executor
    if not owners:
        raise NotFound(f"no executor has a node {node!r}", field=field)
    if len(owners) > 1:
        raise Conflict(f"several executors have a node {node!r}: {owners}; name one", field="executor")
    return owners[0]


async def forget_executor(store: EventStore, scheduler: SchedulerService, name: str, user: str) -> int:
    """Forget a vanished executor with its nodes; its active runs end as lost (requeued or
    failed, once: a second call finds no executor). Return how many runs ended."""
    await scheduler.follower.catch_up()  # attempts counts as of now
    async with store.transaction() as tx:
        conn = await tx.views()
        if not await fleet_views.executor_known(conn, name):
            raise NotFound(f"executor {name!r} not found", field="name")
        runs = await fleet_views.active_runs(conn, name)
        lost = [
            LostRun(
                RunInfo(run.run_id, run.job_id, name, run.node), FORGOTTEN, FailureCause.LEASE_EXPIRED, True
            )
            for run in runs
        ]
        await scheduler.end_lost_runs(tx, lost)
        tx.append([ev.ExecutorDeleted(executor_id=name, requestor=user)])
    await scheduler.follower.catch_up()
    return len(lost)


async def list_executors(store: EventStore) -> ExecutorList:
    """Every executor with its settings, nodes (and their cordons) and running jobs."""
    async with store.engine.connect() as conn:
        fleet = await fleet_views.fleet(conn)
    executors = []
    for row in fleet.executors:
        setting = fleet.cordons.executors.get(row.name)
        cordoned_nodes = fleet.cordons.nodes.get(row.name, {})
        nodes = [
            NodeSummary(
                name=node.name,
                unschedulable=node.unschedulable,
                ready=node.ready,
                cordoned=node.name in cordoned_nodes,
                cordon_reason=cordoned_nodes.get(node.name, ""),
                running_jobs=fleet.running[(row.name, node.name)],
            )
            for node in row.nodes
        ]
        executors.append(
            ExecutorSummary(
                name=row.name,
                pool=row.pool,
                last_seen=row.last_seen,
                cordoned=bool(setting and setting.cordoned),
                cordon_reason=setting.reason if setting else "",
                cordoned_by=setting.set_by if setting else "",
                running_jobs=sum(n for (executor, _), n in fleet.running.items() if executor == row.name),
                nodes=nodes,
            )
        )
    return ExecutorList(executors=executors)
