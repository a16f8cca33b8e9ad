"""The one lifecycle table, and the executor's tracker moving runs only as it allows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from armada.executor.backend import RunStatus
from armada.executor.tracker import CleanUp, Report, RunTracker
from armada.model.leases import Lease, RunEvent
from armada.model.lifecycle import (
    JOB_MOVES,
    JOB_STATE_AFTER,
    PHASE_STATE,
    RUN_MOVES,
    RUN_STATE_AFTER,
    TERMINAL_JOB_STATES,
    JobState,
    RunState,
    job_moves,
    run_moves,
)

_ORDER = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]


def test_every_state_has_a_row() -> None:
    assert set(RUN_MOVES) == set(RunState) and set(JOB_MOVES) == set(JobState)


def test_runs_only_move_forward_and_an_ended_run_moves_no_more() -> None:
    for current in RunState:
        for to in RUN_MOVES[current]:
            assert not current.active or to not in _ORDER[: _ORDER.index(current) + 1]
        if not current.active:
            assert RUN_MOVES[current] == frozenset()
    assert run_moves(RunState.LEASED, RunState.SUCCEEDED), "a short run may be seen ended at once"
    assert not run_moves(RunState.RUNNING, RunState.PENDING)


def test_a_finished_job_moves_no_more_and_an_unfinished_one_may_always_end() -> None:
    for state in TERMINAL_JOB_STATES:
        assert JOB_MOVES[state] == frozenset()
    for state in (JobState.QUEUED, JobState.LEASED, JobState.PENDING, JobState.RUNNING):
        assert JOB_MOVES[state] >= TERMINAL_JOB_STATES
    assert job_moves(JobState.RUNNING, JobState.QUEUED), "a returned run requeues its job"
    assert not job_moves(JobState.RUNNING, JobState.LEASED)


def test_events_lead_to_states_that_agree() -> None:
    for kind, run_state in RUN_STATE_AFTER.items():
        job_state = JOB_STATE_AFTER.get(kind)
        if job_state is not None:  # an event that ends a run ends its job, and the other way
            assert run_state.active == job_state.active
    assert all(state.active for state in PHASE_STATE.values())


_KINDS = st.sampled_from(["pending", "running", "ingressInfo", "succeeded", "failed", "leaseReturned"])
_STEPS = st.lists(st.one_of(_KINDS, st.sampled_from(["kill", "gone", "deliver"])), max_size=30)


@given(_STEPS)
def test_the_tracker_reports_only_moves_the_lifecycle_allows(steps: list[str]) -> None:
    tracker = RunTracker()
    tracker.accept(Lease(run_id="r", job_id="j", queue="q", job_set_id="s"))
    reported: list[RunEvent] = []
    undelivered: list[RunEvent] = []
    cleaned = killed_at = 0
    for step in steps:
        if step == "kill":
            instructions = tracker.kill("r", "cancel")
            killed_at = killed_at or len(reported) + 1
        elif step == "gone":
            instructions = tracker.gone("r")
        elif step == "deliver":
            instructions, undelivered = tracker.delivered(undelivered), []
        else:
            instructions = tracker.observe(RunStatus(run_id="r", kind=step))  # type: ignore[arg-type]
        new = [i.event for i in instructions if isinstance(i, Report)]
        reported += new
        undelivered += new
        cleaned += sum(isinstance(i, CleanUp) for i in instructions)
    state = RunState.LEASED
    for event in reported:
        if event.kind == "ingressInfo":
            assert state is RunState.RUNNING
            continue
        assert run_moves(state, RUN_STATE_AFTER[event.kind]), (state, event.kind)
        state = RUN_STATE_AFTER[event.kind]
    assert sum(e.kind == "ingressInfo" for e in reported) <= 1
    if killed_at:
        assert len(reported) < killed_at, "nothing is reported of a run being killed"
    assert cleaned <= 1 and (cleaned == 0) == tracker.holds("r")
