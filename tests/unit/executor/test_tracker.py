from __future__ import annotations

import asyncio
import contextlib

import msgspec

from armada.executor.backend import FoundRun, RunStatus
from armada.executor.backoff import Backoff
from armada.executor.categories import Classifier, ErrorCategoriesSettings
from armada.executor.reporter import EventReporter
from armada.executor.tracker import RunTracker
from armada.model.leases import Lease, RunEvent, RunEventBatch


class Sink:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []
        self.released: list[str] = []
        self.discarded: list[str] = []

    async def publish(self, event: RunEvent) -> None:
        self.events.append(event)

    async def release(self, run_id: str, discard: bool = False) -> None:
        self.released.append(run_id)
        if discard:
            self.discarded.append(run_id)


def make() -> tuple[RunTracker, Sink]:
    sink = Sink()
    return RunTracker(sink.publish, sink.release), sink


def lease(run_id: str) -> Lease:
    return Lease(run_id=run_id, job_id=f"job-{run_id}", queue="q", job_set_id="s")


async def test_only_forward_moves_become_events() -> None:
    tracker, sink = make()
    assert tracker.accept(lease("r1"))
    assert not tracker.accept(lease("r1"))
    for kind in ("pending", "pending", "running", "pending", "succeeded", "failed"):
        await tracker.observe(RunStatus(run_id="r1", kind=kind))
    assert [e.kind for e in sink.events] == ["pending", "running", "succeeded"]
    assert tracker.reports() == {"r1": "running"}, "held until delivered"
    await tracker.delivered(sink.events)
    assert tracker.reports() == {} and sink.released == ["r1"]


async def test_ingress_info_is_reported_once_and_only_while_running() -> None:
    tracker, sink = make()
    tracker.accept(lease("r1"))
    addresses = {8080: "10.0.0.1:30080"}
    info = RunStatus(run_id="r1", kind="ingressInfo", ingress_addresses=addresses, pod_ip="10.244.0.2")
    await tracker.observe(RunStatus(run_id="r1", kind="pending"))
    await tracker.observe(info)  # the addresses of a pod not running yet are not reported
    for status in (
        RunStatus(run_id="r1", kind="running"),
        info,
        info,
        RunStatus(run_id="r1", kind="succeeded"),
    ):
        await tracker.observe(status)
    await tracker.observe(info)
    assert [e.kind for e in sink.events] == ["pending", "running", "ingressInfo", "succeeded"]
    assert (sink.events[2].ingress_addresses, sink.events[2].pod_ip) == (addresses, "10.244.0.2")
    assert tracker.reports() == {"r1": "running"}  # ingressInfo is no phase


async def test_killed_run_reports_nothing_more_and_leaves_when_gone() -> None:
    tracker, sink = make()
    tracker.accept(lease("r1"))
    await tracker.observe(RunStatus(run_id="r1", kind="running"))
    assert tracker.start_kill("r1", "cancel")
    assert not tracker.start_kill("r1", "cancel")
    assert list(tracker.reports().values()) == ["terminating"]
    await tracker.observe(RunStatus(run_id="r1", kind="succeeded"))
    await tracker.gone("r1")
    assert [e.kind for e in sink.events] == ["running"]
    assert tracker.holds("r1"), "its running event is not delivered yet"
    await tracker.delivered(sink.events)
    assert not tracker.holds("r1")


async def test_unexpected_disappearance_returns_the_lease() -> None:
    tracker, sink = make()
    tracker.accept(lease("r1"))
    await tracker.observe(RunStatus(run_id="r1", kind="running"))
    await tracker.gone("r1")
    returned = sink.events[-1]
    assert (returned.kind, returned.run_attempted, returned.retryable) == ("leaseReturned", True, True)


async def test_adopted_runs_wait_for_confirmation() -> None:
    tracker, sink = make()
    tracker.adopt(
        [
            FoundRun(run_id="stale", job_id="j1", phase="running"),
            FoundRun(run_id="live", job_id="j2", phase="running"),
        ]
    )
    await tracker.observe(RunStatus(run_id="stale", kind="succeeded"))
    await tracker.observe(RunStatus(run_id="live", kind="succeeded"))
    assert sink.events == []
    tracker.start_kill("stale", "cancel")
    await tracker.confirm_all()
    assert [(e.run_id, e.kind) for e in sink.events] == [("live", "succeeded")]
    await tracker.gone("stale")
    assert not tracker.holds("stale")


async def test_unknown_runs_are_ignored() -> None:
    tracker, sink = make()
    await tracker.observe(RunStatus(run_id="nope", kind="running"))
    await tracker.gone("nope")
    assert sink.events == [] and not tracker.start_kill("nope", "cancel")


async def test_a_terminal_event_survives_the_cancellation_of_its_observer() -> None:
    """Once a run is marked finished its event must be published, even if the caller is cancelled."""
    gate = asyncio.Event()
    published: list[RunEvent] = []

    async def slow_publish(event: RunEvent) -> None:
        await gate.wait()  # a full event buffer: back-pressure
        published.append(event)

    tracker = RunTracker(slow_publish, Sink().release)
    tracker.accept(lease("r1"))
    observing = asyncio.create_task(tracker.observe(RunStatus(run_id="r1", kind="succeeded")))
    await asyncio.sleep(0)
    observing.cancel()
    gate.set()
    with contextlib.suppress(asyncio.CancelledError):
        await observing
    await tracker.observe(RunStatus(run_id="r1", kind="succeeded"))  # a repeat is dropped
    for _ in range(3):
        await asyncio.sleep(0)
    assert [e.kind for e in published] == ["succeeded"]


async def test_failed_events_carry_the_failure_category() -> None:
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
    sink = Sink()
    tracker = RunTracker(sink.publish, sink.release, Classifier(settings))
    for run_id, code, cause in (("r1", 42, "Error"), ("r2", 137, "OOM"), ("r3", 1, "Error")):
        tracker.accept(lease(run_id))
        await tracker.observe(RunStatus(run_id=run_id, kind="failed", exit_code=code, cause=cause))
    named = [(e.failure_category, e.failure_subcategory) for e in sink.events]
    assert named == [("transient", "x"), ("oom", ""), ("", "")]


async def test_a_failure_in_a_delete_category_discards_its_workload_once_delivered() -> None:
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
    sink = Sink()
    tracker = RunTracker(sink.publish, sink.release, Classifier(settings))
    for run_id, code in (("r1", 42), ("r2", 3)):
        tracker.accept(lease(run_id))
        await tracker.observe(RunStatus(run_id=run_id, kind="failed", exit_code=code))
    assert sink.released == []  # nothing goes before the failure is delivered
    await tracker.delivered(sink.events)
    assert sink.released == ["r1", "r2"]
    assert sink.discarded == ["r1"]  # Retain (the default) keeps r2's workload


async def test_events_are_offered_to_the_reporter_and_put_once_its_buffer_is_full() -> None:
    """Events go to a reporter with room at once; when it is full the observer waits for room."""
    delivered: list[RunEvent] = []

    class Server:
        async def report_events(self, batch: RunEventBatch) -> None:
            delivered.extend(batch.events)

    sink = Sink()
    reporter = EventReporter(
        Server(), "ex", on_delivered=lambda _: asyncio.sleep(0), backoff=Backoff(0.001, 0.002), max_buffered=2
    )
    tracker = RunTracker(reporter.put, sink.release, offer=reporter.offer)
    for run_id in ("r1", "r2", "r3"):
        tracker.accept(lease(run_id))
    await tracker.observe(RunStatus(run_id="r1", kind="pending"))
    await tracker.observe(RunStatus(run_id="r2", kind="pending"))
    assert reporter.full
    waiting = asyncio.create_task(tracker.observe(RunStatus(run_id="r3", kind="pending")))
    await asyncio.sleep(0)
    assert not waiting.done(), "no room: the third event waits"
    assert tracker.reports() == {"r1": "pending", "r2": "pending", "r3": "pending"}
    assert tracker.count("pending") == 3 and tracker.count("leased") == 0
    runner = asyncio.create_task(reporter.run())
    await waiting
    assert await reporter.flush(within=30)
    runner.cancel()
    assert [e.run_id for e in delivered] == ["r1", "r2", "r3"]
