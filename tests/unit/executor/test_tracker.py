from __future__ import annotations

import asyncio
import contextlib

import msgspec

from armada.executor.backend import FoundRun, RunStatus
from armada.executor.backoff import Backoff
from armada.executor.categories import Classifier, ErrorCategoriesSettings
from armada.executor.observer import TrackingObserver
from armada.executor.reporter import EventReporter
from armada.executor.tracker import CleanUp, Instruction, Kill, KillReason, Report, RunTracker
from armada.model.leases import Lease, RunEvent, RunEventBatch


def make(classifier: Classifier | None = None) -> RunTracker:
    return RunTracker(classifier)


def lease(run_id: str) -> Lease:
    return Lease(run_id=run_id, job_id=f"job-{run_id}", queue="q", job_set_id="s")


def reported(instructions: list[Instruction]) -> list[RunEvent]:
    return [i.event for i in instructions if isinstance(i, Report)]


def test_only_forward_moves_become_events() -> None:
    tracker = make()
    assert tracker.accept(lease("r1"))
    assert not tracker.accept(lease("r1"))
    events: list[RunEvent] = []
    for kind in ("pending", "pending", "running", "pending", "succeeded", "failed"):
        events += reported(tracker.observe(RunStatus(run_id="r1", kind=kind)))
    assert [e.kind for e in events] == ["pending", "running", "succeeded"]
    assert tracker.reports() == {"r1": "running"}, "held until delivered"
    assert tracker.delivered(events) == [CleanUp("r1", discard=False)]
    assert tracker.reports() == {}


def test_ingress_info_is_reported_once_and_only_while_running() -> None:
    tracker = make()
    tracker.accept(lease("r1"))
    addresses = {8080: "10.0.0.1:30080"}
    info = RunStatus(run_id="r1", kind="ingressInfo", ingress_addresses=addresses, pod_ip="10.244.0.2")
    events = reported(tracker.observe(RunStatus(run_id="r1", kind="pending")))
    assert tracker.observe(info) == []  # the addresses of a pod not running yet are not reported
    for status in (
        RunStatus(run_id="r1", kind="running"),
        info,
        info,
        RunStatus(run_id="r1", kind="succeeded"),
        info,
    ):
        events += reported(tracker.observe(status))
    assert [e.kind for e in events] == ["pending", "running", "ingressInfo", "succeeded"]
    assert (events[2].ingress_addresses, events[2].pod_ip) == (addresses, "10.244.0.2")
    assert tracker.reports() == {"r1": "running"}  # ingressInfo is no phase


def test_killed_run_reports_nothing_more_and_leaves_when_gone() -> None:
    tracker = make()
    tracker.accept(lease("r1"))
    events = reported(tracker.observe(RunStatus(run_id="r1", kind="running")))
    assert tracker.kill("r1", "cancel") == [Kill("r1", "cancel")]
    assert tracker.kill("r1", "cancel") == [], "already being killed"
    assert list(tracker.reports().values()) == ["terminating"]
    assert tracker.observe(RunStatus(run_id="r1", kind="succeeded")) == []
    assert tracker.gone("r1") == []
    assert [e.kind for e in events] == ["running"]
    assert tracker.holds("r1"), "its running event is not delivered yet"
    assert tracker.delivered(events) == [CleanUp("r1", discard=False)]
    assert not tracker.holds("r1")


def test_unexpected_disappearance_returns_the_lease() -> None:
    tracker = make()
    tracker.accept(lease("r1"))
    tracker.observe(RunStatus(run_id="r1", kind="running"))
    (returned,) = reported(tracker.gone("r1"))
    assert (returned.kind, returned.run_attempted, returned.retryable) == ("leaseReturned", True, True)


def test_adopted_runs_wait_for_confirmation() -> None:
    tracker = make()
    tracker.adopt(
        [
            FoundRun(run_id="stale", job_id="j1", phase="running"),
            FoundRun(run_id="live", job_id="j2", phase="running"),
        ]
    )
    assert tracker.observe(RunStatus(run_id="stale", kind="succeeded")) == []
    assert tracker.observe(RunStatus(run_id="live", kind="succeeded")) == []
    tracker.kill("stale", "cancel")
    assert [(e.run_id, e.kind) for e in reported(tracker.confirm_all())] == [("live", "succeeded")]
    assert tracker.gone("stale") == [CleanUp("stale", discard=False)]
    assert not tracker.holds("stale")


def test_an_adopted_run_found_terminating_still_moves_forward() -> None:
    tracker = make()
    tracker.adopt([FoundRun(run_id="r1", job_id="j1", phase="terminating")])
    tracker.confirm_all()
    assert [e.kind for e in reported(tracker.observe(RunStatus(run_id="r1", kind="failed")))] == ["failed"]


def test_unknown_runs_are_ignored() -> None:
    tracker = make()
    assert tracker.observe(RunStatus(run_id="nope", kind="running")) == []
    assert tracker.gone("nope") == [] and tracker.kill("nope", "cancel") == []
    assert tracker.delivered([RunEvent(run_id="nope", job_id="j", kind="running")]) == []


async def test_a_terminal_event_survives_the_cancellation_of_its_observer() -> None:
    """Once a run is marked finished its event must be put, even if the caller is cancelled."""
    gate = asyncio.Event()
    published: list[RunEvent] = []

    async def slow_put(event: RunEvent) -> None:
        await gate.wait()  # a full event buffer: back-pressure
        published.append(event)

    tracker = make()
    observer = TrackingObserver(tracker, put=slow_put, clean_up=Sink().clean_up, kill=Sink().kill)
    tracker.accept(lease("r1"))
    observing = asyncio.create_task(observer.observe(RunStatus(run_id="r1", kind="succeeded")))
    await asyncio.sleep(0)
    observing.cancel()
    gate.set()
    with contextlib.suppress(asyncio.CancelledError):
        await observing
    await observer.observe(RunStatus(run_id="r1", kind="succeeded"))  # a repeat is dropped
    for _ in range(3):
        await asyncio.sleep(0)
    assert [e.kind for e in published] == ["succeeded"]


class Sink:
    """What a ``TrackingObserver`` was told to do."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []
        self.cleaned: list[tuple[str, bool]] = []
        self.killed: list[tuple[str, str]] = []

    async def put(self, event: RunEvent) -> None:
        self.events.append(event)

    async def clean_up(self, run_id: str, discard: bool) -> None:
        self.cleaned.append((run_id, discard))

    def kill(self, run_id: str, why: KillReason) -> None:
        self.killed.append((run_id, why))


async def test_the_observer_carries_out_instructions_in_order() -> None:
    sink = Sink()
    tracker = make()
    observer = TrackingObserver(tracker, put=sink.put, clean_up=sink.clean_up, kill=sink.kill)
    for run_id in ("r1", "r2"):
        tracker.accept(lease(run_id))
    await observer.observe(RunStatus(run_id="r1", kind="running"))
    await observer.execute(tracker.kill("r2", "preempt"))
    await observer.gone("r2")
    await observer.gone("r1")
    assert [(e.run_id, e.kind) for e in sink.events] == [("r1", "running"), ("r1", "leaseReturned")]
    assert sink.killed == [("r2", "preempt")] and sink.cleaned == [("r2", False)]
    await observer.execute(tracker.delivered(sink.events))
    assert sink.cleaned == [("r2", False), ("r1", False)]


def test_failed_events_carry_the_failure_category() -> None:
    settings = msgspec.convert(
        {
            "categories": [
                {
                    "name": "transient",
                    "rules": [{"onExitCodes": {"operator": "In", "values": [42]}, "subcategory": "x"}],
                }
            ]
        },
        ErrorCategoriesSettings,
    )
    tracker = make(Classifier(settings))
    events: list[RunEvent] = []
    for run_id, code, cause in (("r1", 42, "Error"), ("r2", 137, "OOM"), ("r3", 1, "Error")):
        tracker.accept(lease(run_id))
        events += reported(
            tracker.observe(RunStatus(run_id=run_id, kind="failed", exit_code=code, cause=cause))
        )
    named = [(e.failure_category, e.failure_subcategory) for e in events]
    assert named == [("transient", "x"), ("oom", ""), ("", "")]


def test_a_failure_in_a_delete_category_discards_its_workload_once_delivered() -> None:
    settings = msgspec.convert(
        {
            "categories": [
                {
                    "name": "transient",
                    "action": "Delete",
                    "rules": [{"onExitCodes": {"operator": "In", "values": [42]}}],
                },
                {"name": "user-error", "rules": [{"onExitCodes": {"operator": "In", "values": [3]}}]},
            ]
        },
        ErrorCategoriesSettings,
    )
    tracker = make(Classifier(settings))
    events: list[RunEvent] = []
    for run_id, code in (("r1", 42), ("r2", 3)):
        tracker.accept(lease(run_id))
        events += reported(tracker.observe(RunStatus(run_id=run_id, kind="failed", exit_code=code)))
    assert len(events) == 2  # nothing is cleaned up before the failure is delivered
    # Retain (the default) keeps r2's workload
    assert tracker.delivered(events) == [CleanUp("r1", discard=True), CleanUp("r2", discard=False)]


async def test_events_are_offered_to_the_reporter_and_put_once_its_buffer_is_full() -> None:
    """Events go to a reporter with room at once; when it is full the observer waits for room."""
    delivered: list[RunEvent] = []

    class Server:
        async def report_events(self, batch: RunEventBatch) -> None:
            delivered.extend(batch.events)

    sink = Sink()
    reporter = EventReporter(
        Server(),
        "ex",
        on_delivered=lambda _: asyncio.sleep(0),
        backoff=lambda: Backoff(0.001, 0.002),
        max_buffered=2,
    )
    tracker = make()
    observer = TrackingObserver(
        tracker, put=reporter.put, offer=reporter.offer, clean_up=sink.clean_up, kill=sink.kill
    )
    for run_id in ("r1", "r2", "r3"):
        tracker.accept(lease(run_id))
    await observer.observe(RunStatus(run_id="r1", kind="pending"))
    await observer.observe(RunStatus(run_id="r2", kind="pending"))
    assert reporter.full
    waiting = asyncio.create_task(observer.observe(RunStatus(run_id="r3", kind="pending")))
    await asyncio.sleep(0)
    assert not waiting.done(), "no room: the third event waits"
    assert tracker.reports() == {"r1": "pending", "r2": "pending", "r3": "pending"}
    assert tracker.count("pending") == 3 and tracker.count("leased") == 0
    runner = asyncio.create_task(reporter.run())
    await waiting
    assert await reporter.flush(within=30)
    runner.cancel()
    assert [e.run_id for e in delivered] == ["r1", "r2", "r3"]
