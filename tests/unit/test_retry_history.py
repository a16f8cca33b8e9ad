"""A job's retry history folded from its events: each attempt's end, category and decision."""

from __future__ import annotations

from armada.model import events as ev
from armada.model.lifecycle import FailureCause
from armada.model.retry import MemoryMutation, Mutation, ResourcesMutation
from armada.model.retry_mutation import avoid_node_labels, mutate_job
from armada.model.wire.retry_history import history_lines
from armada.retries.history import retry_history
from tests.factories import make_job, submission

JOB = make_job(queue="q", job_set_id="s", memory="1Gi")
ENV: ev.Envelope = {"queue": "q", "job_set_id": "s", "job_id": JOB.id}
DOUBLE = Mutation(resources=ResourcesMutation(memory=MemoryMutation(factor=2.0)))


def _run(n: int) -> ev.Envelope:
    return {**ENV, "run_id": f"run-{n}"}


def _story() -> list[ev.Event]:
    """Retried by rule 1 with more memory, an expiry retried by rule 2, a free return, then
    a refusal: the whole life of one job."""
    bigger = mutate_job(JOB, DOUBLE, "n1")
    assert bigger is not None
    return [
        *submission(JOB),
        ev.JobLeased(**_run(1), cluster_id="c", node_id="n1"),
        ev.JobLeaseReturned(
            **_run(1),
            reason="exit code 42; retry 1 of 3",
            run_attempted=True,
            failure_category="oom",
            retry_policy="p",
            retry_rule=1,
        ),
        ev.JobQueued(**ENV, attempts=1, failure_retries=1, retry_policy="p", retry_rule=1, job=bigger),
        ev.JobLeased(**_run(2), cluster_id="c", node_id="n2"),
        ev.JobLeaseExpired(**_run(2), cluster_id="c"),
        ev.JobQueued(**ENV, attempts=2, failure_retries=2, retry_policy="p", retry_rule=2),
        ev.JobLeased(**_run(3), cluster_id="c", node_id="n1"),
        ev.JobLeaseReturned(**_run(3), reason="node drained"),
        ev.JobQueued(**ENV, attempts=3),  # the legacy requeue of a free return records no budget
        ev.JobLeased(**_run(4), cluster_id="c", node_id="n3"),
        ev.JobRunning(**_run(4), cluster_id="c", node_name="n3"),
        ev.JobFailed(
            **_run(4),
            reason="exit code 1; retry policy 'p' no rule matches other: defaultAction says Fail",
            failure_category="other",
            failure_subcategory="x",
            retry_policy="p",
        ),
    ]


def test_every_attempt_its_end_category_and_decision() -> None:
    history = retry_history(_story())
    assert (history.retries_granted, history.retry_policy) == (2, "p")
    seen = [
        (a.attempt, a.run_id, a.outcome, a.failure_category, a.decision, a.retry_rule, a.retries_used)
        for a in history.attempts
    ]
    assert seen == [
        (1, "run-1", "failed", "oom", "Retry", 1, 1),
        (2, "run-2", "expired", "internal", "Retry", 2, 2),
        (3, "run-3", "returned", "", "", None, 0),
        (4, "run-4", "failed", "other", "Fail", None, 2),
    ]
    assert history.attempts[0].mutations == ["memory 1Gi -> 2Gi"]
    assert history.attempts[1].failure_subcategory == "lease-expired"
    assert history.attempts[2].reason == "node drained"


def test_a_job_the_scheduler_rejects_after_its_retry_and_a_fenced_requeue() -> None:
    fenced = avoid_node_labels(JOB, {"kubernetes.io/hostname": "n1"})
    assert fenced is not None
    events: list[ev.Event] = [
        *submission(JOB),
        ev.JobLeased(**_run(1), cluster_id="c", node_id="n1"),
        ev.JobLeaseReturned(**_run(1), reason="pod could not start", run_attempted=True),
        ev.JobQueued(**ENV, attempts=1, job=fenced),
        ev.JobFailed(**ENV, reason="no node left", cause=FailureCause.REJECTED),
    ]
    history = retry_history(events)
    assert [(a.outcome, a.run_id, a.decision) for a in history.attempts] == [
        ("returned", "run-1", ""),
        ("rejected", "", ""),
    ]
    assert history.attempts[0].mutations == ["avoid node n1"]
    assert history.retries_granted == 0 and history.retry_policy == ""


def test_an_expiry_the_policy_refuses_and_a_success() -> None:
    expired = [
        *submission(JOB),
        ev.JobLeased(**_run(1), cluster_id="c", node_id="n1"),
        ev.JobLeaseExpired(**_run(1), cluster_id="c"),
        ev.JobFailed(
            **ENV,
            reason="lease expired; retry policy 'p' retryLimit 0 reached",
            cause=FailureCause.LEASE_EXPIRED,
            failure_category="internal",
            failure_subcategory="lease-expired",
            retry_policy="p",
            retry_rule=0,
        ),
    ]
    [attempt] = retry_history(expired).attempts
    assert (attempt.outcome, attempt.decision, attempt.retry_rule) == ("expired", "Fail", 0)
    succeeded = [
        *submission(JOB),
        ev.JobLeased(**_run(1), cluster_id="c", node_id="n1"),
        ev.JobSucceeded(**_run(1)),
    ]
    assert [a.outcome for a in retry_history(succeeded).attempts] == ["succeeded"]
    assert not retry_history(succeeded).eventful, "one plain run: no retry story to tell"
    assert retry_history(expired).eventful and retry_history(_story()).eventful
    assert retry_history(submission(JOB)).attempts == []


def test_history_lines_read_the_same_everywhere() -> None:
    lines = history_lines(retry_history(_story()))
    assert lines[0] == "Retries: 2 granted by retry policy 'p', 4 attempts"
    assert lines[1] == (
        "  attempt 1, run-1, failed, on n1, category oom, Retry by 'p' rule 1 (retries used 1), "
        "then memory 1Gi -> 2Gi: exit code 42; retry 1 of 3"
    )
    assert "expired, on n2, category internal/lease-expired, Retry by 'p' rule 2" in lines[2]
    assert lines[3] == "  attempt 3, run-3, returned, on n1: node drained"
    assert "Fail by 'p' defaultAction (retries used 2)" in lines[4]
