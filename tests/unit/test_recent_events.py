"""The newest appended events kept in memory: served only when nothing is missing from them."""

from __future__ import annotations

from armada.eventstore.recent import RecentEvents, StoredEvent
from tests.factories import make_job, submission


def held(first_seq: int, count: int) -> RecentEvents:
    recent = RecentEvents(capacity=100)
    events = [event for _ in range(count // 2) for event in submission(make_job())]
    recent.add(first_seq, events)
    return recent


def seqs(stored: list[StoredEvent] | None) -> list[int] | None:
    return None if stored is None else [item.seq for item in stored]


def test_events_after_a_seq_are_served_up_to_the_limit() -> None:
    recent = held(11, 10)  # seqs 11..20
    assert seqs(recent.after(10, known_head=20, limit=100)) == list(range(11, 21))
    assert seqs(recent.after(14, known_head=20, limit=3)) == [15, 16, 17]


def test_a_reader_at_the_head_gets_nothing_without_the_database() -> None:
    assert held(11, 10).after(20, known_head=20, limit=100) == []


def test_what_is_not_held_is_left_to_the_database() -> None:
    recent = held(11, 10)
    assert recent.after(9, known_head=20, limit=100) is None  # seq 10 is not held
    assert recent.after(20, known_head=21, limit=100) is None  # another replica appended 21
    assert recent.after(15, known_head=22, limit=100) is None
    assert recent.after(21, known_head=21, limit=100) is None  # ahead of what is held
    assert RecentEvents().after(0, known_head=0, limit=100) is None
