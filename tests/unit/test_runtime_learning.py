"""The forecasts' runtime learning, fed events as the log follower would."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from armada.model import events as ev
from armada.model.jobs import Job
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling import SchedulingConfig
from armada.scheduling.runtimes import EXPECTED_RUNTIME_ANNOTATION
from armada.services.runtime_learning import RuntimeLearner
from tests.factories import pod_spec

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def submitted(job_id: str, job_set: str = "set", **annotations: str) -> ev.JobSubmitted:
    job = Job(id=job_id, queue="q", job_set_id=job_set, namespace="default", pod_spec=pod_spec(),
              annotations=annotations)  # fmt: skip
    return ev.JobSubmitted(queue="q", job_set_id=job_set, job_id=job_id, job=job, created=T0)


def ran(
    learner: RuntimeLearner, state: ClusterState, job_id: str, seconds: float, job_set: str = "set"
) -> None:
    envelope = {"queue": "q", "job_set_id": "set", "job_id": job_id, "run_id": f"r-{job_id}"}
    learner(state, submitted(job_id))
    learner(state, ev.JobRunning(**envelope, created=T0))
    learner(state, ev.JobSucceeded(**envelope, created=T0 + timedelta(seconds=seconds)))


def test_runtimes_are_learned_per_job_set_then_per_queue_and_shape() -> None:
    state = ClusterState(SchedulingConfig())
    learner = RuntimeLearner(default_runtime=3600)
    for i, seconds in enumerate([100, 120, 110, 9000]):  # one outlier
        ran(learner, state, f"done{i}", seconds)
    learner(state, submitted("next"))
    state.apply(1, submitted("next"))
    learner(state, submitted("other-set", job_set="new"))
    state.apply(2, submitted("other-set", job_set="new"))
    estimates = learner.estimates(state, T0.timestamp())
    assert estimates["next"].basis == "learned from 4 runs of its job set"
    # The median of the set's runs and of its queue and shape's: the outlier moves it by one place.
    assert estimates["next"].expected == pytest.approx(115)
    assert estimates["other-set"].basis == "learned from 4 runs of its queue and shape"
    assert estimates["other-set"].expected == pytest.approx(115)
    assert not learner.started


def test_running_members_of_a_job_set_lengthen_its_estimate() -> None:
    state = ClusterState(SchedulingConfig())
    learner = RuntimeLearner(default_runtime=3600)
    for i in range(3):
        ran(learner, state, f"done{i}", 100)
    for job_id in ("long1", "long2", "queued"):
        learner(state, submitted(job_id))
        state.apply(1, submitted(job_id))
    before = learner.estimates(state, T0.timestamp())["queued"]
    for job_id in ("long1", "long2"):
        envelope = {"queue": "q", "job_set_id": "set", "job_id": job_id, "run_id": f"r-{job_id}"}
        learner(state, ev.JobRunning(**envelope, created=T0))
    assert learner.running(state, T0.timestamp() + 400) == {("q", "set"): [400.0, 400.0]}
    after = learner.estimates(state, T0.timestamp() + 400)["queued"]
    assert after.expected > 1.5 * before.expected  # two siblings past 400 s against three runs of 100 s
    assert after.basis == "learned from 3 runs of its job set (2 still running)"


def test_hint_and_deadline_and_run_starts() -> None:
    state = ClusterState(SchedulingConfig())
    learner = RuntimeLearner(default_runtime=3600)
    learner(state, submitted("hinted", **{EXPECTED_RUNTIME_ANNOTATION: "5m"}))
    state.apply(1, submitted("hinted", **{EXPECTED_RUNTIME_ANNOTATION: "5m"}))
    envelope = {"queue": "q", "job_set_id": "set", "job_id": "hinted", "run_id": "r1"}
    learner(state, ev.JobRunning(**envelope, created=T0))
    assert learner.started == {"hinted": T0.timestamp()}
    hinted = learner.estimates(state, T0.timestamp())["hinted"]
    assert (hinted.expected, hinted.basis) == (pytest.approx(300), "hint")  # just started: no news
    learner(state, ev.JobLeaseReturned(**envelope))
    assert learner.started == {}
