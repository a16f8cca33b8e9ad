"""Job states held from recent appends: a gap, the head, age and capacity send calls to the views."""

from __future__ import annotations

from armada.eventstore.recent_states import MAX_AGE_SECONDS, SEGMENT_SECONDS, RecentJobStates
from armada.model import events as ev


def moved(job_id: str, kind: type[ev.Event] = ev.JobQueued) -> ev.Event:
    return kind(queue="q", job_set_id="s", job_id=job_id)


def test_the_last_state_changing_event_tells_the_state() -> None:
    states = RecentJobStates(clock=lambda: 0.0)
    states.add(
        1,
        [moved("a"), moved("b"), ev.JobReprioritized(queue="q", job_set_id="s", job_id="a", new_priority=2)],
    )
    states.add(4, [moved("a", ev.JobCancelled)])
    assert states.states(["a", "b", "c"], head=4) == ({"a": "CANCELLED", "b": "QUEUED"}, ["c"])


def test_a_gap_or_a_newer_head_sends_every_id_to_the_views() -> None:
    states = RecentJobStates(clock=lambda: 0.0)
    states.add(1, [moved("a")])
    assert states.states(["a"], head=3) == ({}, ["a"])  # another replica appended 2 and 3
    states.add(4, [moved("b")])  # after the gap: only what follows it is held
    assert states.states(["a", "b"], head=4) == ({"b": "QUEUED"}, ["a"])


def test_old_entries_and_those_past_capacity_are_not_used() -> None:
    now = [0.0]
    states = RecentJobStates(clock=lambda: now[0], capacity=2)
    states.add(1, [moved("a")])
    now[0] = SEGMENT_SECONDS
    states.add(2, [moved("b")])
    now[0] = 2 * SEGMENT_SECONDS
    states.add(3, [moved("c")])  # three held: the oldest segment goes
    assert states.states(["a", "b", "c"], head=3) == ({"b": "QUEUED", "c": "QUEUED"}, ["a"])
    now[0] = SEGMENT_SECONDS + MAX_AGE_SECONDS + 1
    assert states.states(["b", "c"], head=3) == ({"c": "QUEUED"}, ["b"])


def test_pruned_jobs_are_forgotten_and_the_others_kept() -> None:
    states = RecentJobStates(clock=lambda: 0.0)
    states.add(1, [moved("a", ev.JobCancelled), moved("b")])
    states.forget(["a", "z"])
    assert states.states(["a", "b"], head=2) == ({"b": "QUEUED"}, ["a"])
