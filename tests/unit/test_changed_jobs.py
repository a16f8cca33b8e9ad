"""ChangedJobs: which jobs recent appends touched, or None when it cannot know."""

from __future__ import annotations

from armada.eventstore.changed import ChangedJobs


def test_jobs_changed_after_a_position_are_found_among_those_asked_about() -> None:
    changed = ChangedJobs()
    changed.add(1, 2, ["a", "b"])
    changed.add(3, 5, ["c", "a"])
    assert changed.among({"a", "b", "z"}, 0, 5) == {"a", "b"}
    assert changed.among({"a", "b", "z"}, 2, 5) == {"a"}
    assert changed.among({"b"}, 2, 5) == set()
    assert changed.among({"a"}, 5, 5) == set()  # nothing appended since


def test_unknown_when_another_replica_appended_or_history_is_too_old() -> None:
    changed = ChangedJobs(span=10)
    changed.add(1, 2, ["a"])
    assert changed.among({"a"}, 0, 3) is None, "seq 3 was appended elsewhere"
    changed.add(4, 5, ["b"])  # a gap (3 was not ours): what came before is forgotten
    assert changed.among({"a", "b"}, 3, 5) == {"b"}
    assert changed.among({"a", "b"}, 1, 5) is None
    changed.add(6, 30, ["c"])
    assert changed.among({"b", "c"}, 5, 30) == {"c"}
    assert changed.among({"b", "c"}, 3, 30) is None, "appends older than the span are dropped"
