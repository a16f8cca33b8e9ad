"""The retry engine's decisions and budgets (upstream's rules), including a property test."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import create_async_engine

from armada.cli.follow import JobSetSummary, notable
from armada.eventstore.store import EventStore
from armada.model import events as ev
from armada.model.leases import RunEvent, RunEventBatch
from armada.model.lifecycle import JobState, RunState
from armada.model.retry import RetryPolicy, RetryRule, matching_rule
from armada.model.retry_engine import (
    RetryEngineSettings,
    decide,
    fail_fast,
    policy_name_for,
    retries_granted,
)
from armada.retries.attempts import run_ended_without_result
from armada.retries.engine import RetryContext, _JobFacts, expiry_events
from armada.scheduler.run_events import RunEventIntake, _RunFacts
from armada.scheduler.settings import SchedulerServiceSettings
from tests.factories import make_job, submission

POLICY = RetryPolicy(
    name="p",
    retry_limit=2,
    default_action="Fail",
    rules=[
        RetryRule(action="Fail", on_category="user-error"),
        RetryRule(action="Retry", on_category="transient"),
        RetryRule(action="Retry", on_category="internal", on_subcategory="lease-expired"),
    ],
)


def test_first_matching_rule_decides_and_subcategory_narrows() -> None:
    assert matching_rule(POLICY, "user-error", "") == 0
    assert matching_rule(POLICY, "transient", "anything") == 1
    assert matching_rule(POLICY, "internal", "lease-expired") == 2
    assert matching_rule(POLICY, "internal", "node-failure") is None
    assert matching_rule(POLICY, "Transient", "") is None, "case-sensitive"


def test_verdicts() -> None:
    fail = decide(POLICY, category="user-error", subcategory="", retries_used=0, global_max_retries=5)
    assert not fail.retry and fail.rule == 0 and "says Fail" in fail.explanation
    retry = decide(POLICY, category="transient", subcategory="", retries_used=0, global_max_retries=5)
    assert retry.retry and retry.rule == 1 and "retry 1 of 2" in retry.explanation
    spent = decide(POLICY, category="transient", subcategory="", retries_used=2, global_max_retries=5)
    assert not spent.retry and "retryLimit 2" in spent.explanation
    default = decide(POLICY, category="other", subcategory="", retries_used=0, global_max_retries=5)
    assert not default.retry and default.rule is None and "defaultAction" in default.explanation
    kill_switch = decide(POLICY, category="transient", subcategory="", retries_used=0, global_max_retries=0)
    assert not kill_switch.retry and "globalMaxRetries 0" in kill_switch.explanation
    fast = decide(
        POLICY, category="transient", subcategory="", retries_used=0, global_max_retries=5, fail_fast_job=True
    )
    assert not fast.retry and "failFast" in fast.explanation


def test_policy_choice_and_fail_fast_annotation() -> None:
    on = RetryEngineSettings(enabled=True, default_policy_name="fleet")
    assert policy_name_for(["a", "b"], on) == "a"
    assert policy_name_for([], on) == "fleet"
    assert policy_name_for(["a"], RetryEngineSettings()) == "", "engine off: no policy applies"
    assert fail_fast({"armadaproject.io/failFast": "true"}) and not fail_fast({})


#: What can happen to a run: a categorised failure, a returned lease, an expired lease, a preemption.
OUTCOMES = st.sampled_from(["fail-transient", "fail-other", "returned", "expired", "preempted"])
#: The genuine failures: only these may spend the budget, one retry each.
GENUINE = {"fail-transient", "fail-other", "expired"}


class _Server:
    """One job's life through the server's own code, without a database: executor reports
    (failures, returned leases) through the run-event intake's translation, expiries through
    :func:`expiry_events`, a preemption of a job that opted into ``retryOnPreemption`` through
    the scheduler's :func:`run_ended_without_result`. Each step starts from the budget read
    back from the events so far (:func:`retries_granted`, as ``RetryContext.load`` does)."""

    def __init__(self, policy: RetryPolicy, settings: RetryEngineSettings) -> None:
        self.policy, self.settings = policy, settings
        # The intake's translation never touches the store: an engine that is never connected.
        store = EventStore(create_async_engine("sqlite+aiosqlite://"))
        self.intake = RunEventIntake(store, SchedulerServiceSettings(max_retries=1000), settings)
        self.job = make_job(queue="q", job_set_id="s")
        self.log: list[ev.Event] = list(submission(self.job))
        self.runs = 0

    @property
    def queued(self) -> list[ev.JobQueued]:
        return [e for e in self.log if isinstance(e, ev.JobQueued)]

    @property
    def spent(self) -> int:
        return retries_granted(self.queued)

    @property
    def over(self) -> bool:
        return any(isinstance(e, ev.JobFailed | ev.JobPreempted) for e in self.log)

    def step(self, outcome: str) -> None:
        self.runs += 1
        job_envelope: ev.Envelope = {"queue": "q", "job_set_id": "s", "job_id": self.job.id}
        run: ev.Envelope = {**job_envelope, "run_id": f"run-{self.runs}"}
        attempts = self.queued[-1].attempts
        context = RetryContext(self.settings)
        context.jobs[self.job.id] = _JobFacts(self.policy, False, self.spent, self.job)
        if outcome == "expired":
            decided = expiry_events(context, job_envelope, attempts=attempts, reason="lease expired")
            assert decided is not None
            self.log += [ev.JobLeaseExpired(**run, cluster_id="c1"), *decided]
        elif outcome == "preempted":
            self.log += run_ended_without_result(
                run, run_attempted=True, attempts=attempts, max_retries=1000, reason="preempted"
            )
        else:
            self.log += self._report(run, attempts, context, outcome)

    def _report(self, run: ev.Envelope, attempts: int, context: RetryContext, outcome: str) -> list[ev.Event]:
        facts = _RunFacts(
            run_state=RunState.RUNNING,
            cluster="c1",
            node="n1",
            job_active=True,
            latest_run_id=run["run_id"],
            envelope=run,
            attempts=attempts,
            cancel_requested=False,
            preempt_requested=False,
            cancel_reason="",
            cancel_user="",
            reason="",
        )
        if outcome == "returned":
            event = RunEvent(run_id=run["run_id"], job_id=self.job.id, kind="leaseReturned", reason="drained")
        else:
            category = "transient" if outcome == "fail-transient" else "other"
            event = RunEvent(
                run_id=run["run_id"],
                job_id=self.job.id,
                kind="failed",
                exit_code=1,
                failure_category=category,
            )
        batch = RunEventBatch(executor_id="c1", events=[event])
        return self.intake._translate_batch(batch, {run["run_id"]: facts}, context).events


@settings(max_examples=300, deadline=None)
@given(
    limit=st.integers(0, 6),
    global_max=st.integers(0, 6),
    default_retry=st.booleans(),
    outcomes=st.lists(OUTCOMES, max_size=40),
)
def test_no_job_exceeds_global_max_or_its_retry_limit(
    limit: int, global_max: int, default_retry: bool, outcomes: list[str]
) -> None:
    """Whatever the sequence of failures, returns, expiries and preemptions: returns and
    preemptions cost nothing, a genuine failure that is retried costs exactly one, and no
    job is ever granted more than ``globalMaxRetries`` or its ``retryLimit``."""
    policy = RetryPolicy(
        name="p",
        retry_limit=limit,
        default_action="Retry" if default_retry else "Fail",
        rules=[
            RetryRule(action="Retry", on_category="transient"),
            RetryRule(action="Retry", on_category="internal", on_subcategory="lease-expired"),
        ],
    )
    server = _Server(policy, RetryEngineSettings(enabled=True, global_max_retries=global_max))
    for outcome in outcomes:
        before = server.spent
        server.step(outcome)
        if server.over:
            assert outcome in GENUINE, f"a {outcome} never fails the job (maxRetries is out of reach)"
            assert server.spent == before
            break
        assert server.spent == before + (outcome in GENUINE), f"{outcome} after {before} retries"
        assert server.spent <= min(limit, global_max)
    assert server.spent <= limit and server.spent <= global_max


def test_watch_lines_name_the_category_and_the_decision() -> None:
    failed = ev.JobFailed(
        job_id="j", exit_code=3, reason="exit code 3; says Fail", failure_category="user-error"
    )
    assert notable(failed) == "job j failed (Error, exit code 3, category user-error): exit code 3; says Fail"
    retried = ev.JobFailed(  # as the stream shows a retried run
        job_id="j",
        exit_code=42,
        reason="exit code 42; retry 1 of 2",
        failure_category="transient",
        failure_subcategory="x",
        retry_policy="p",
        retryable=True,
    )
    assert notable(retried) == (
        "job j failed (Error, exit code 42, category transient/x): exit code 42; retry 1 of 2 (will retry)"
    )
    summary = JobSetSummary()
    summary.apply(ev.JobQueued(job_id="j"))
    summary.apply(retried)
    assert summary.states == {"j": JobState.QUEUED} and not summary.finished, "a retried run ends nothing"
