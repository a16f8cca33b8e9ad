"""Test-suite case files (merged documents, durations, validation) and event matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from armada.model.durations import parse_duration
from armada.testsuite.progress import Progress
from armada.testsuite.spec import SpecError, load_case

CASE = """
queue: q
jobs:
  - namespace: default
    podSpec: {containers: [{name: main, image: alpine}]}
---
cancel:
  request:
    reason: stop
timeout: "1m30s"
expectedEvents:
  - submitted:
  - cancelled:
"""


@pytest.mark.parametrize(
    ("text", "seconds"), [("100s", 100), ("1m30s", 90), ("500ms", 0.5), ("2h", 7200), ("7", 7)]
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10 s", "1d", "s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_documents_are_merged_and_defaults_follow_upstream(tmp_path: Path) -> None:
    path = tmp_path / "cancel_case.yaml"
    path.write_text(CASE)
    case = load_case(path)
    assert (case.name, case.queue, case.num_batches, case.batch_size) == ("cancel_case", "q", 1, 1)
    assert (case.action, case.trigger, case.timeout_seconds) == ("cancel", "queued", 90)
    assert case.action_fields == {"reason": "stop"}
    assert case.expected == ["submitted", "cancelled"]
    assert case.jobs[0].pod_spec == {"containers": [{"name": "main", "image": "alpine"}]}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("expectedEvent: []", "expectedEvent"),
        ("preempt: {}", "at most one action"),
        ('timeout: "soon"', "not a duration"),
        ("- a list", "mapping"),
    ],
)
def test_bad_cases_name_the_file_and_the_problem(tmp_path: Path, extra: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"{CASE}\n---\n{extra}\n")
    with pytest.raises(SpecError, match=message) as raised:
        load_case(path)
    assert str(path) in str(raised.value)


def test_expected_events_are_an_ordered_subsequence_by_type() -> None:
    progress = Progress(["submitted", "running", "succeeded"])
    progress.add("j1", "submitted")  # before the submission response named the job
    progress.expect(["j1", "j2"])
    for kind in ("queued", "leased", "running", "succeeded"):
        progress.add("j1", kind)
    assert not progress.passed()
    assert progress.summary() == "1 of 2 jobs unfinished; job j2 saw [], waiting for submitted"
    for kind in ("submitted", "running", "succeeded"):
        progress.add("j2", kind)
    assert progress.passed()
    assert progress.all_saw("running")
    assert not progress.failure()


def test_an_unexpected_terminal_event_fails_at_once() -> None:
    progress = Progress(["submitted", "succeeded"])
    progress.expect(["j1"])
    for kind in ("submitted", "running", "failed"):
        progress.add("j1", kind)
    assert progress.failure() == (
        "job j1: unexpected failed while waiting for succeeded (saw [submitted, running, failed])"
    )
