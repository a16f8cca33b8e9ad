"""Run events reported by executors, turned into job events exactly once.

Executors retry event batches until delivered, so the same observation may arrive twice,
and events of runs the server has since given up on may arrive late. Both are handled by
the run lifecycle (``model/lifecycle``), checked against the run and its job as this replica follows them
(or, for what it does not hold in memory, as the views hold them), and checked again inside
the append if the job changed meanwhile: an event that would not move its run forward is
dropped. A
killed run's failure becomes the cancellation or preemption that was asked for; a failure
the executor marks retryable, or a returned lease, requeues the job until its retries are
used up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.job_views import runs_with_ingress_info, runs_with_their_jobs
from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.leases import RunEvent, RunEventBatch
from armada.model.lifecycle import RUN_STATE_AFTER, FailureCause, JobState, RunState, run_moves
from armada.model.retry_engine import RetryEngineSettings
from armada.retries.attempts import requeue_or_fail
from armada.retries.avoidance import EndedRun, avoiding_jobs
from armada.retries.engine import RetryContext, verdict_events
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.settings import SchedulerServiceSettings
from armada.scheduler.store import SchedulerStore
from armada.tracing import span

log = structlog.get_logger(__name__)

#: Event kinds whose translation reads more of the views than the run and its job (retry
#: policies, node fencing, earlier ingress events): their batches are decided from the views.
_READS_VIEWS = frozenset({"failed", "leaseReturned", "ingressInfo"})
#: States by stored name: a dict lookup is ~10x cheaper than calling the enum.
_RUN_STATES = {state.value: state for state in RunState}
_JOB_STATES = {state.value: state for state in JobState}


@dataclass(slots=True)
class _RunFacts:
    """A run and its job as the views hold them, updated as the batch is applied."""

    run_state: RunState
    cluster: str
    node: str
    job_active: bool
    latest_run_id: str
    envelope: ev.Envelope
    attempts: int
    cancel_requested: bool
    preempt_requested: bool
    cancel_reason: str
    cancel_user: str
    reason: str
    #: The run's ``ingressInfo`` event is in the log (or in this batch) already.
    ingress_reported: bool = False

    @property
    def active(self) -> bool:
        return self.run_state.active and self.job_active and self.latest_run_id == self.envelope["run_id"]


@dataclass
class _Translation:
    """The job events a batch implies, the jobs read to decide them, and the events applied."""

    job_ids: set[str]
    events: list[ev.Event] = field(default_factory=list)
    applied: int = 0
    #: Jobs a requeue fences off the node their run failed on, by job id.
    fenced: dict[str, Job] = field(default_factory=dict)


class RunEventIntake:
    def __init__(
        self,
        store: SchedulerStore,
        settings: SchedulerServiceSettings,
        retry: RetryEngineSettings | None = None,
        follower: EventLogFollower | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.retry = retry or RetryEngineSettings()
        #: The cluster as this replica follows it: which nodes a requeued job could go to instead.
        self.follower = follower
        if self.retry.enabled and self.retry.global_max_retries == 0:
            log.warning("retry engine kill switch on: globalMaxRetries is 0, no failure will be retried")

    async def report(self, batch: RunEventBatch) -> int:
        """Append the job events the batch implies; return how many run events took effect."""
        with span("armada.run_report", events=len(batch.events)):
            run_ids = sorted({event.run_id for event in batch.events})

            async def translate(conn: AsyncConnection) -> _Translation:
                facts = await self._facts(conn, run_ids)
                if any(e.kind == "ingressInfo" for e in batch.events):
                    for run_id in await runs_with_ingress_info(
                        conn, [f.envelope["job_id"] for f in facts.values()]
                    ):
                        if run_id in facts:
                            facts[run_id].ingress_reported = True
                failed = {
                    facts[e.run_id].envelope["job_id"]
                    for e in batch.events
                    if e.kind == "failed" and e.run_id in facts
                }
                retry = await RetryContext.load(conn, self.retry, sorted(failed))
                fenced = await self._fenced(conn, batch, facts)
                return self._translate_batch(batch, facts, retry, fenced)

            followed = self._followed_facts(batch, run_ids)
            if followed is None:
                return (await self.store.append_optimistically(translate)).applied
            seen, facts = followed
            draft = self._translate_batch(batch, facts)
            return (await self.store.append_checked(draft, seen, translate))[0].applied

    def _followed_facts(
        self, batch: RunEventBatch, run_ids: list[str]
    ) -> tuple[int, dict[str, _RunFacts]] | None:
        """The batch's runs and jobs as this replica follows them, and the log position they
        are as of (the append re-checks every job that changed since); ``None`` when the views
        must decide: a run not active here (ended, or leased after the follower's position),
        a kill asked for (its reason is in the views only), or an event that reads more.

        Most batches are runs starting and ending: this spares them a query per batch.
        """
        if self.follower is None or any(event.kind in _READS_VIEWS for event in batch.events):
            return None
        state = self.follower.state
        facts: dict[str, _RunFacts] = {}
        for run_id in run_ids:
            run = state.runs.get(run_id)
            extras = state.extras.get(run.job_id) if run is not None else None
            if run is None or extras is None or extras.cancel_requested or extras.preempt_requested:
                return None
            facts[run_id] = _RunFacts(
                run_state=run.state,
                cluster=run.executor,
                node=run.node,
                job_active=True,  # a job keeps its extras until it ends
                latest_run_id=extras.run_id,
                envelope={
                    "queue": extras.queue,
                    "job_set_id": extras.job_set_id,
                    "job_id": run.job_id,
                    "run_id": run_id,
                },
                attempts=extras.attempts,
                cancel_requested=False,
                preempt_requested=False,
                cancel_reason="",
                cancel_user="",
                reason="",
            )
        return state.seq, facts

    async def _fenced(
        self, conn: AsyncConnection, batch: RunEventBatch, facts: dict[str, _RunFacts]
    ) -> dict[str, Job]:
        """Jobs whose run this batch gives back after it reached its node (a returned lease of
        a started pod, a retryable failure), fenced off that node for their requeue."""
        if self.follower is None:
            return {}
        ended = [
            EndedRun(facts[e.run_id].envelope["job_id"], batch.executor_id, e.node or facts[e.run_id].node)
            for e in batch.events
            if e.run_id in facts
            and ((e.kind == "leaseReturned" and e.run_attempted) or (e.kind == "failed" and e.retryable))
        ]
        labels = self.settings.avoid_node_labels_on_retry
        return await avoiding_jobs(conn, self.follower.state, self.store.unreadable, ended, labels)

    def _translate_batch(
        self,
        batch: RunEventBatch,
        facts: dict[str, _RunFacts],
        retry: RetryContext | None = None,
        fenced: dict[str, Job] | None = None,
    ) -> _Translation:
        translation = _Translation(
            job_ids={run.envelope["job_id"] for run in facts.values()}, fenced=fenced or {}
        )
        if retry is not None:
            translation.job_ids |= retry.watched_jobs()
        for event in batch.events:
            run = facts.get(event.run_id)
            if run is None or run.cluster != batch.executor_id:
                continue
            if retry is not None and event.run_id in retry.stopped_runs:
                continue  # a gang member's run this batch already stopped
            produced = self._translate(event, run, retry, translation.fenced)
            if produced:
                translation.events += produced
                translation.applied += 1
        return translation

    async def _facts(self, conn: AsyncConnection, run_ids: list[str]) -> dict[str, _RunFacts]:
        found: dict[str, _RunFacts] = {}
        for row in await runs_with_their_jobs(conn, run_ids):
            found[row.run_id] = _RunFacts(
                run_state=_RUN_STATES[row.run_state],
                cluster=row.cluster,
                node=row.node,
                job_active=_JOB_STATES[row.job_state].active,
                latest_run_id=row.latest_run_id or "",
                envelope={
                    "queue": row.queue,
                    "job_set_id": row.job_set_id,
                    "job_id": row.job_id,
                    "run_id": row.run_id,
                },
                attempts=row.attempts,
                cancel_requested=row.cancel_requested,
                preempt_requested=row.preempt_requested,
                cancel_reason=row.cancel_reason or "",
                cancel_user=row.cancel_user or "",
                reason=row.reason or "",
            )
        return found

    def _translate(
        self, event: RunEvent, run: _RunFacts, retry: RetryContext | None, fenced: dict[str, Job]
    ) -> list[ev.Event]:
        if not run.active:
            return []
        where = {"cluster_id": run.cluster, "node_name": event.node or run.node, "pod_name": event.pod_name}
        match event.kind:
            case "pending" | "running":
                target = RUN_STATE_AFTER[event.kind]
                if not run_moves(run.run_state, target):
                    return []
                run.run_state = target
                if target == RunState.PENDING:
                    return [ev.JobPending(**run.envelope, created=event.time, **where)]
                return [ev.JobRunning(**run.envelope, created=event.time, **where)]
            case "ingressInfo":
                if run.run_state != RunState.RUNNING or run.ingress_reported:
                    return []
                run.ingress_reported = True
                return [
                    ev.JobIngressInfo(
                        **run.envelope,
                        created=event.time,
                        **where,
                        pod_ip=event.pod_ip,
                        ingress_addresses=event.ingress_addresses,
                    )
                ]
            case "succeeded":
                run.run_state = RunState.SUCCEEDED
                return [ev.JobSucceeded(**run.envelope, created=event.time, **where)]
            case "failed":
                return self._ended(event, run, failed=True, retry=retry, fenced=fenced)
            case "leaseReturned":
                return self._ended(event, run, failed=False, fenced=fenced)

    def _ended(
        self,
        event: RunEvent,
        run: _RunFacts,
        *,
        failed: bool,
        retry: RetryContext | None = None,
        fenced: dict[str, Job],
    ) -> list[ev.Event]:
        """A run that stopped without succeeding: killed on request, failed, or given back."""
        run.run_state = RunState.FAILED if failed else RunState.RETURNED
        envelope = run.envelope
        if run.cancel_requested:
            return [ev.JobCancelled(**envelope, reason=run.cancel_reason, requestor=run.cancel_user)]
        if run.preempt_requested:
            return [ev.JobPreempted(**envelope, reason=run.reason)]
        returned = ev.JobLeaseReturned(
            **envelope,
            cluster_id=run.cluster,
            reason=event.reason,
            run_attempted=event.run_attempted or failed,
        )
        verdict = (
            retry.judge(envelope["job_id"], event.failure_category, event.failure_subcategory)
            if (failed and retry is not None)
            else None
        )
        if verdict is not None and retry is not None:
            run.run_state = RunState.RETURNED if verdict.retry else RunState.FAILED
            decided = verdict_events(
                verdict,
                returned,
                self._failed(event, run),
                attempts=run.attempts,
                retries_used=retry.retries_used(envelope["job_id"]),
                job=retry.mutated(envelope["job_id"], verdict, event.node or run.node),
            )
            return decided + retry.gang_follows(
                envelope["job_id"], verdict, event.reason, event.node or run.node
            )
        if failed and not event.retryable:
            return [self._failed(event, run)]
        job_envelope: ev.Envelope = {k: v for k, v in envelope.items() if k != "run_id"}  # type: ignore[assignment]
        return [
            returned,
            *requeue_or_fail(
                job_envelope,
                attempts=run.attempts,
                max_retries=self.settings.max_retries,
                reason=event.reason,
                job=fenced.get(envelope["job_id"]),
            ),
        ]

    @staticmethod
    def _failed(event: RunEvent, run: _RunFacts) -> ev.JobFailed:
        return ev.JobFailed(
            **run.envelope,
            created=event.time,
            reason=event.reason,
            cause=FailureCause(event.cause) if event.cause else FailureCause.ERROR,
            exit_code=event.exit_code,
            retryable=False,
            log_tail=event.log_tail,
            cluster_id=run.cluster,
            node_name=event.node or run.node,
            pod_name=event.pod_name,
            failure_category=event.failure_category,
            failure_subcategory=event.failure_subcategory,
        )
