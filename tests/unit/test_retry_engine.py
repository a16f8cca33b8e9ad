"""The retry engine's decisions and budgets (upstream's rules), including a property test."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from armada.cli.follow import JobSetSummary, notable
from armada.model import events as ev
from armada.model.retry import RetryPolicy, RetryRule, matching_rule
from armada.model.retry_engine import RetryEngineSettings, decide, fail_fast, policy_name_for
from armada.model.states import JobState
from armada.services.retry_engine import RetryContext, _JobFacts
from tests.factories import make_job

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
    """Through the engine's own bookkeeping (``RetryContext.judge``, as the server uses it):
    returns and preemptions never reach the engine; failures and expiries do."""
    policy = RetryPolicy(
        name="p",
        retry_limit=limit,
        default_action="Retry" if default_retry else "Fail",
        rules=[RetryRule(action="Retry", on_category="transient")],
    )
    context = RetryContext(RetryEngineSettings(enabled=True, global_max_retries=global_max))
    context.jobs["j"] = _JobFacts(policy, False, 0, make_job())
    granted = 0
    for outcome in outcomes:
        if outcome in ("returned", "preempted"):
            continue  # free: no budget spent, no decision
        category = {"fail-transient": "transient", "fail-other": "other", "expired": "internal"}[outcome]
        verdict = context.judge("j", category, "lease-expired" if outcome == "expired" else "")
        assert verdict is not None
        if not verdict.retry:
            break  # the job failed for good
        granted += 1
        assert context.retries_used("j") == granted <= min(limit, global_max)
    assert granted <= limit and granted <= global_max


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
