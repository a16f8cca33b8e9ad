"""The retry engine at the edge of the store: what a failed run means for its job.

When ``scheduling.retryPolicy.enabled`` is on and a failed run's queue names a retry policy
(or ``defaultPolicyName`` is set), the policy decides instead of the legacy ``maxRetries``
path. A retry ends the run as returned (with the failure's category and the deciding
policy and rule, so the job's history explains it) and requeues the job with one more
granted retry (and, for a rule with ``mutate``, the changed job); a refusal fails the job
with the category and the reason. A gang is retried as one (:mod:`gang_retries`) unless
``retryGangs`` is off; then, as upstream, gangs keep the legacy path.

Why a retry ends the run as *returned* rather than *failed*: a ``failed`` event ends the
job everywhere (views, scheduler, clients following the stream), so a retried failure is
told as the run given back, with its category, and the job requeued.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.job_views import job_queue_specs, queued_event_payloads
from armada.eventstore.queue_views import queue_specs
from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.lifecycle import FailureCause
from armada.model.retry import RetryPolicy
from armada.model.retry_engine import (
    RetryEngineSettings,
    Verdict,
    decide,
    fail_fast,
    policy_name_for,
    retries_granted,
)
from armada.model.retry_mutation import mutate_job
from armada.retries.gangs import GangMember, fail_others, load_gangs, restart_others, restartable
from armada.retries.policies import load_policies

_job_decoder = msgspec.json.Decoder(Job)
_queued_decoder = msgspec.json.Decoder(ev.JobQueued)


@dataclass
class _JobFacts:
    policy: RetryPolicy
    fail_fast: bool
    retries_used: int
    job: Job
    #: The job's gang (empty for a job on its own).
    gang: list[GangMember] = field(default_factory=list)


@dataclass
class RetryContext:
    """The policies, and each failed job's budget, read once per batch of run events."""

    settings: RetryEngineSettings
    jobs: dict[str, _JobFacts] = field(default_factory=dict)
    #: Runs of gang members stopped in this batch (their own events are then stale).
    stopped_runs: set[str] = field(default_factory=set)

    @classmethod
    async def load(
        cls, conn: AsyncConnection, settings: RetryEngineSettings, job_ids: list[str]
    ) -> RetryContext:
        """Read what the engine needs for ``job_ids`` in a fixed number of queries: their
        specs, their gangs (one query for all) and their budgets (one query for all)."""
        context = cls(settings)
        if not settings.enabled or not job_ids:
            return context
        policies = await load_policies(conn)
        queue_policies = await _queue_policies(conn)
        candidates: list[tuple[str, str, RetryPolicy, Job]] = []
        for job_id, queue, spec in await job_queue_specs(conn, job_ids):
            policy = policies.get(policy_name_for(queue_policies.get(queue, []), settings))
            job = _decode_job(spec)
            if policy is None or job is None:
                continue
            if job.gang_cardinality >= 2 and not settings.retry_gangs:
                continue  # as upstream: gangs keep the legacy path
            candidates.append((job_id, queue, policy, job))
        gangs = await load_gangs(
            conn, {(queue, job.gang_id) for _, queue, _, job in candidates if job.gang_cardinality >= 2}
        )
        members = {
            job_id: gangs.get((queue, job.gang_id), []) if job.gang_cardinality >= 2 else []
            for job_id, queue, _, job in candidates
        }
        budgets = await _retries_used(
            conn, {m.job_id for gang in members.values() for m in gang} | {c[0] for c in candidates}
        )
        for job_id, _, policy, job in candidates:
            gang = members[job_id]
            if gang and not restartable(gang):
                continue
            used = max(budgets.get(member, 0) for member in [m.job_id for m in gang] or [job_id])
            context.jobs[job_id] = _JobFacts(policy, fail_fast(job.annotations), used, job, gang)
        return context

    def judge(self, job_id: str, category: str, subcategory: str) -> Verdict | None:
        """The engine's verdict on a genuine failure; ``None``: the legacy path decides."""
        facts = self.jobs.get(job_id)
        if facts is None:
            return None
        verdict = decide(
            facts.policy,
            category=category,
            subcategory=subcategory,
            retries_used=facts.retries_used,
            global_max_retries=self.settings.global_max_retries,
            fail_fast_job=facts.fail_fast,
        )
        if verdict.retry:
            facts.retries_used += 1
        return verdict

    def mutated(self, job_id: str, verdict: Verdict, failed_node: str) -> Job | None:
        """The job as a retry decided by ``verdict`` runs (``None``: unchanged); compounding."""
        facts = self.jobs.get(job_id)
        if facts is None or verdict.mutate is None or not verdict.retry:
            return None
        changed = mutate_job(facts.job, verdict.mutate, failed_node)
        if changed is not None:
            facts.job = changed
        return changed

    def gang_follows(self, job_id: str, verdict: Verdict, why: str, failed_node: str) -> list[ev.Event]:
        """The rest of a gang member's gang follows the verdict on it: after a retry the other
        members are stopped and requeued, each mutated as the verdict says (the failing
        member's node is avoided by all of them); after a refusal (a rule's ``Fail``, the
        gang's budget spent) they fail too. Either way the gang stays whole."""
        facts = self.jobs.get(job_id)
        if facts is None or not facts.gang:
            return []
        if verdict.retry:
            mutated: dict[str, Job] = {}
            if verdict.mutate is not None:
                for member in facts.gang:
                    job = _decode_job(member.spec) if member.job_id != job_id else None
                    changed = mutate_job(job, verdict.mutate, failed_node) if job is not None else None
                    if changed is not None:
                        mutated[member.job_id] = changed
            events, stopped = restart_others(
                facts.gang, job_id, retries_used=facts.retries_used, why=why, mutated=mutated
            )
        else:
            events, stopped = fail_others(facts.gang, job_id, why=f"{why}; {verdict.explanation}")
        self.stopped_runs |= stopped
        return events

    def watched_jobs(self) -> set[str]:
        """Jobs whose rows decided this batch's events beyond the batch's own (gang members)."""
        return {member.job_id for facts in self.jobs.values() for member in facts.gang}

    def retries_used(self, job_id: str) -> int:
        facts = self.jobs.get(job_id)
        return facts.retries_used if facts else 0


def _decode_job(spec: object) -> Job | None:
    try:
        if isinstance(spec, bytes | str):
            return _job_decoder.decode(spec)
        return msgspec.convert(spec, Job)
    except msgspec.DecodeError:
        return None


async def _queue_policies(conn: AsyncConnection) -> dict[str, list[str]]:
    rows = await queue_specs(conn)
    return {name: list((spec or {}).get("retryPolicies") or []) for name, spec in rows}


async def _retries_used(conn: AsyncConnection, job_ids: Collection[str]) -> dict[str, int]:
    """Retries granted so far to each job, from its ``queued`` events (:func:`retries_granted`)."""
    queued: dict[str, list[ev.JobQueued]] = {}
    for job_id, payload in await queued_event_payloads(conn, job_ids):
        try:
            queued.setdefault(job_id, []).append(_queued_decoder.decode(payload))
        except msgspec.DecodeError:
            continue
    return {job_id: retries_granted(events) for job_id, events in queued.items()}


def verdict_events(
    verdict: Verdict,
    run: ev.JobLeaseReturned,
    failed: ev.JobFailed,
    *,
    attempts: int,
    retries_used: int,
    job: Job | None = None,
) -> list[ev.Event]:
    """The events of a verdict: a returned run and a requeue, or the job's failure."""
    if not verdict.retry:
        explained = f"{failed.reason}; {verdict.explanation}"
        return [
            msgspec.structs.replace(
                failed, reason=explained, retry_policy=verdict.policy, retry_rule=_rule(verdict)
            )
        ]
    returned = msgspec.structs.replace(
        run,
        reason=f"{failed.reason}; {verdict.explanation}",
        run_attempted=True,
        failure_category=failed.failure_category,
        failure_subcategory=failed.failure_subcategory,
        retry_policy=verdict.policy,
        retry_rule=_rule(verdict),
        exit_code=failed.exit_code,
        node_name=failed.node_name,
    )
    job_envelope: ev.Envelope = {
        "queue": run.queue,
        "job_set_id": run.job_set_id,
        "job_id": run.job_id,
    }
    requeued = ev.JobQueued(
        **job_envelope,
        attempts=attempts,
        failure_retries=retries_used,
        retry_policy=verdict.policy,
        retry_rule=_rule(verdict),
        failure_category=failed.failure_category,
        job=job,
    )
    return [returned, requeued]


#: The category the server gives a run whose executor went silent (upstream's name).
LEASE_EXPIRED = ("internal", "lease-expired")


def expiry_events(
    context: RetryContext, envelope: ev.Envelope, *, attempts: int, reason: str
) -> list[ev.Event] | None:
    """The job events after an expired lease when the engine decides it (``None``: legacy).

    An expiry is a genuine failure: it spends budget like a failed run. It is never mutated
    (the lost node is not a node to avoid; more memory does not cure a lost executor).
    """
    category, subcategory = LEASE_EXPIRED
    facts = context.jobs.get(envelope["job_id"])
    if facts is not None and facts.gang:
        return None  # a gang's members expire one by one: the legacy path requeues each
    verdict = context.judge(envelope["job_id"], category, subcategory)
    if verdict is None:
        return None
    if verdict.retry:
        used = context.retries_used(envelope["job_id"])
        requeued = ev.JobQueued(
            **envelope,
            attempts=attempts,
            failure_retries=used,
            retry_policy=verdict.policy,
            retry_rule=_rule(verdict),
            failure_category=category,
        )
        return [requeued]
    return [
        ev.JobFailed(
            **envelope,
            reason=f"{reason}; {verdict.explanation}",
            cause=FailureCause.LEASE_EXPIRED,
            retryable=False,
            failure_category=category,
            failure_subcategory=subcategory,
            retry_policy=verdict.policy,
            retry_rule=_rule(verdict),
        )
    ]


def _rule(verdict: Verdict) -> int:
    """The deciding rule's index as events carry it (-1: ``defaultAction``)."""
    return -1 if verdict.rule is None else verdict.rule
