"""The lease call's report of held runs: the executor's journal (``armada.executor.runs_report``)
and the server's reports (``armada.scheduler.held_runs``), alone and together."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from armada.executor.runs_report import FULL_REPORT_SECONDS, HeldRuns, RunsReport
from armada.model.leases import LeaseRequest
from armada.scheduler.held_runs import HeldRunReports


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def call(report: RunsReport, executor: str = "c1") -> LeaseRequest:
    """The lease call carrying ``report``, as the agent builds it."""
    return LeaseRequest(
        executor_id=executor,
        pool="default",
        runs=report.runs,
        report_id=report.report_id,
        runs_base=report.runs_base,
        runs_gone=report.runs_gone,
        runs_held=report.runs_held,
    )


def holding(count: int, clock: Clock | None = None) -> HeldRuns:
    """An executor holding ``count`` running runs, r1 to r<count>."""
    held = HeldRuns(clock or Clock())
    for number in range(1, count + 1):
        held.hold(f"r{number}", "running")
    return held


def test_the_first_report_is_whole_and_later_ones_only_the_change() -> None:
    held = holding(10)
    first = held.report()
    assert first.runs == {f"r{n}": "running" for n in range(1, 11)} and not first.runs_base
    held.answered(runs_wanted=False)
    held.hold("r11", "leased")
    held.release("r1")
    second = held.report()
    assert second.runs_base == first.report_id
    assert second.runs == {"r11": "leased"} and second.runs_gone == ["r1"] and second.runs_held == 10
    held.answered(runs_wanted=False)
    third = held.report()
    assert third.runs_base == second.report_id and third.runs == {} and third.runs_gone == []


def test_a_run_held_and_released_between_two_reports_is_not_mentioned() -> None:
    held = holding(10)
    held.report()
    held.answered(runs_wanted=False)
    held.hold("r99", "leased")
    held.release("r99")
    report = held.report()
    assert report.runs_base and report.runs == {} and report.runs_gone == [] and report.runs_held == 10


def test_after_a_lost_answer_the_change_builds_on_the_last_answered_report() -> None:
    held = holding(10)
    base = held.report()
    held.answered(runs_wanted=False)
    held.release("r1")
    held.report()
    held.unanswered()
    held.hold("r11", "pending")
    retried = held.report()
    assert retried.runs_base == base.report_id
    assert retried.runs == {"r11": "pending"} and retried.runs_gone == ["r1"]


def test_the_whole_list_goes_when_asked_for_when_the_change_is_big_and_every_minute() -> None:
    clock = Clock()
    held = holding(4, clock=clock)
    held.report()
    held.answered(runs_wanted=False)
    assert held.report().runs_base
    held.answered(runs_wanted=True)
    assert not held.report().runs_base, "asked for: whole"
    held.answered(runs_wanted=False)
    held.release("r1")
    held.release("r2")
    assert not held.report().runs_base, "half the runs changed: whole"
    held.answered(runs_wanted=False)
    clock.now += FULL_REPORT_SECONDS
    assert not held.report().runs_base, "a minute since the last whole list"


def test_a_whole_report_whose_answer_was_lost_is_sent_whole_again() -> None:
    held = holding(10)
    held.report()
    held.unanswered()
    assert not held.report().runs_base


def test_the_server_applies_a_change_to_the_report_it_builds_on() -> None:
    reports = HeldRunReports()
    whole = LeaseRequest(executor_id="c1", pool="p", runs={"r1": "running", "r2": "leased"}, report_id="a")
    assert set(reports.resolve(whole) or ()) == {"r1", "r2"}
    change = LeaseRequest(
        executor_id="c1", pool="p", runs={"r3": "leased"}, report_id="b", runs_base="a", runs_gone=["r1"]
    )
    assert reports.resolve(change) == {"r2", "r3"}
    retried = replace(change, report_id="c", runs_gone=[], runs_held=3)
    assert reports.resolve(retried) == {"r1", "r2", "r3"}, "the base is kept for a change retried"
    assert reports.resolve(replace(change, runs_base="c", report_id="d")) == {"r2", "r3"}


def test_the_server_wants_the_whole_list_for_an_unknown_base_or_a_wrong_count() -> None:
    reports = HeldRunReports()
    change = LeaseRequest(executor_id="c1", pool="p", runs={"r3": "leased"}, report_id="b", runs_base="a")
    assert reports.resolve(change) is None, "a base this replica never saw"
    reports.resolve(LeaseRequest(executor_id="c1", pool="p", runs={"r1": "running"}, report_id="a"))
    assert reports.resolve(replace(change, runs_held=3)) is None, "the count disagrees"
    assert reports.resolve(replace(change, executor_id="c2")) is None, "another executor's base"
    assert reports.resolve(replace(change, runs_held=2)) == {"r1", "r3"}


def test_the_server_forgets_the_executor_heard_from_least_recently_first() -> None:
    reports = HeldRunReports(max_executors=2)
    for executor in ("c1", "c2", "c1", "c3"):
        reports.resolve(LeaseRequest(executor_id=executor, pool="p", runs={"r": "running"}, report_id="a"))
    change = LeaseRequest(executor_id="c2", pool="p", report_id="b", runs_base="a")
    assert reports.resolve(change) is None
    assert reports.resolve(replace(change, executor_id="c1")) == {"r"}


#: One step of an executor's life: hold a new run, release a held one (by position), send a
#: lease call (the server takes it), have its answer arrive or be lost, lose a call before the
#: server sees it, let a minute pass, or have the server forget every report.
#: Repeats weigh the draw towards the usual life: runs come and go while calls are in flight.
ACTIONS = (
    ["hold"] * 4
    + ["release"] * 2
    + ["send", "answer"] * 3
    + [
        "lose answer",
        "lose call",
        "minute",
        "forget",
    ]
)
Step = st.tuples(st.sampled_from(ACTIONS), st.integers(0, 50))


@settings(max_examples=400, deadline=None)
@given(st.lists(Step, max_size=120))
def test_every_call_settles_against_exactly_the_runs_held(steps: list[tuple[str, int]]) -> None:
    clock = Clock()
    held = HeldRuns(clock)
    server = HeldRunReports()
    numbers = iter(range(10_000))
    in_flight: list[bool] = []  # the call sent and not yet answered: whether it got runsWanted
    forgotten = False  # the server lost the reports, and has not had a whole one since
    for action, index in steps:
        if action == "hold":
            held.hold(f"r{next(numbers)}", "leased")
        elif action == "release" and held.phases:
            held.release(sorted(held.phases)[index % len(held.phases)])
        elif action == "minute":
            clock.now += FULL_REPORT_SECONDS
        elif action == "forget":
            server, forgotten = HeldRunReports(), True
        elif in_flight and action in ("answer", "lose answer"):
            runs_wanted = in_flight.pop()
            if action == "answer":
                held.answered(runs_wanted=runs_wanted)
            else:
                held.unanswered()
        elif not in_flight and action == "lose call":
            held.report()
            held.unanswered()
        elif not in_flight and action == "send":
            request = call(held.report())
            resolved = server.resolve(request)
            forgotten = forgotten and bool(request.runs_base)
            if resolved is None:
                assert forgotten, "only a server that lost the base asks for the whole list"
            else:
                assert set(resolved) == set(held.phases), "the server must see what is held"
            in_flight.append(resolved is None)
