"""The shared forward loop with a timeline: arrivals, node changes and cancellations, by hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from armada.scheduling.decisions import SchedulingResult
from armada.scheduling.jobdb import JobDb
from armada.scheduling.queues import QueueSpec
from armada.scheduling.replay import (
    Cancel,
    Forward,
    IntArray,
    NodeChange,
    QueueChange,
    TimelineItem,
    run_forward,
)
from tests.unit.scheduling.helpers import Sim, job, node, unlimited


@dataclass
class Log:
    """Every start, end and departure the loop reports, as ``(time, what, job)``."""

    seen: list[tuple[float, str, str]] = field(default_factory=list)
    #: The job db the loop ran on, as it ended.
    db: JobDb | None = None

    def cycle(self, t: float, result: SchedulingResult, db: JobDb) -> None:
        self.seen += [(t, "start", job_id) for job_id in result.leases.job_ids]
        self.seen += [(t, "preempted", p.job_id) for p in result.preemptions]

    def ended(self, t: float, rows: IntArray, bases: Sequence[str], db: JobDb) -> None:
        self.seen += [(t, "end", job_id) for job_id in db.ids_of(rows)]

    def left(self, t: float, job_id: str, running: bool, why: str) -> None:
        self.seen.append((t, f"{why}{' running' if running else ''}", job_id))

    def done(self) -> bool:
        return False


def run(
    timeline: list[tuple[float, TimelineItem]],
    runtimes: Mapping[str, float],
    queues: Mapping[str, float],
    instants: tuple[float, ...] = (),
    latency: float = 0.0,
    latencies: tuple[float, ...] = (),
    failures: Mapping[str, Sequence[float]] | None = None,
    stalled: tuple[float, ...] = (),
    compact_min: int | None = None,
) -> Log:
    sim = Sim(config=unlimited())
    if compact_min is not None:
        sim.db.compact_min = compact_min
    for name, weight in queues.items():
        sim.queue(name, weight)
    log = Log()
    forward = Forward(
        db=sim.db,
        queues=list(sim.queues.values()),
        config=sim.config,
        state=sim.state,
        runtime=lambda job_ids: ([runtimes[job_id] for job_id in job_ids], [""] * len(job_ids)),
        timeline=timeline,
        cycle_instants=instants,
        lease_latency=latency,
        cycle_latencies=latencies,
        failures=failures or {},
        cycle_stalled=stalled,
    )
    run_forward(forward, 0.0, 1000.0, log)
    log.db = sim.db
    return log


def test_runs_follow_the_job_db_when_it_compacts_mid_simulation() -> None:
    """The rows of ended jobs are reclaimed when ``b`` arrives (a small ``compact_min``): the
    run in progress keeps its end, and ``b`` runs for its own runtime, not for that of the
    job whose row it takes."""
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, NodeChange("ex", (node("n1", cpu=1), node("n2", cpu=1)))),
        (0.0, job("long", "q", submitted=0)),
        *((0.0, job(f"a{i}", "q", submitted=1 + i)) for i in range(6)),
        (20.0, job("b", "q", submitted=20)),
    ]
    runtimes = {"long": 100, **{f"a{i}": 1 for i in range(6)}, "b": 7}
    compacting = run(timeline, runtimes, {"q": 1}, compact_min=2)
    assert compacting.db is not None and len(compacting.db.ids) == 2  # 8 jobs added: compacted
    assert compacting.seen == run(timeline, runtimes, {"q": 1}).seen
    assert {(20.0, "start", "b"), (27.0, "end", "b"), (100.0, "end", "long")} <= set(compacting.seen)


def test_arrivals_wait_for_room_and_a_lost_node_requeues_its_job() -> None:
    one_slot = NodeChange("ex", (node("n1", cpu=1),))
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, one_slot),
        (0.0, job("a", "q", submitted=0)),
        (2.0, job("b", "q", submitted=2)),
        (5.0, NodeChange("ex", ())),  # the executor goes away: a is lost and requeued
        (7.0, one_slot),  # and comes back: a starts again (it queued first)
        (30.0, job("c", "q", submitted=30)),
        (31.0, Cancel("c")),  # cancelled while b runs: c never starts
    ]
    log = run(timeline, {"a": 10, "b": 20, "c": 5}, {"q": 1})
    assert log.seen == [
        (0.0, "start", "a"),
        (5.0, "lost running", "a"),
        (7.0, "start", "a"),
        (17.0, "end", "a"),
        (17.0, "start", "b"),
        (31.0, "cancelled", "c"),
        (37.0, "end", "b"),
    ]


def test_the_freed_slot_goes_to_the_queue_furthest_below_its_weighted_share() -> None:
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, NodeChange("ex", (node("n1", cpu=4),))),
        *((0.0, job(j, "light", submitted=0)) for j in ("l1", "l2")),
        *((0.0, job(j, "heavy", submitted=0)) for j in ("h1", "h2")),
        (1.0, job("x", "light", submitted=1)),
        (2.0, job("y", "heavy", submitted=2)),
    ]
    runtimes = {"l1": 100, "l2": 10, "h1": 100, "h2": 100, "x": 50, "y": 50}
    # At 10 l2 ends: light holds 1 slot of 4, heavy 2. Equal weights: light is further below.
    equal = run(timeline, runtimes, {"light": 1, "heavy": 1})
    assert (10.0, "start", "x") in equal.seen and (10.0, "start", "y") not in equal.seen
    # Weight 3 for heavy: 2/4 over 3 is less than 1/4 over 1, so heavy's y goes first.
    weighted = run(timeline, runtimes, {"light": 1, "heavy": 3})
    assert (10.0, "start", "y") in weighted.seen and (10.0, "start", "x") not in weighted.seen
    # Equal weights until heavy's changes to 3 at 5: as if it had been 3 all along.
    changed = run([*timeline, (5.0, QueueChange(QueueSpec("heavy", 3)))], runtimes, {"light": 1, "heavy": 1})
    assert (10.0, "start", "y") in changed.seen and (10.0, "start", "x") not in changed.seen


def test_a_replay_decides_when_the_live_scheduler_did_and_sees_what_it_saw() -> None:
    """Live, the cycle after ``a`` arrived ran only at 2.4, when ``b`` had arrived too: the
    free slot went to ``b``'s queue (further below its share). Replayed at the recorded
    instants the same happens; cycling every period on its own, the replay gives it to ``a``."""
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, NodeChange("ex", (node("n1", cpu=2),))),
        (0.0, job("busy", "q1", submitted=0)),
        (1.5, job("a", "q1", submitted=1.5)),
        (2.2, job("b", "q2", submitted=2.2)),
    ]
    runtimes = {"busy": 100, "a": 10, "b": 10}
    eager = run(timeline, runtimes, {"q1": 1, "q2": 1})
    assert (2.0, "start", "a") in eager.seen  # a cycle period after the one at 1.0
    # The live cycles decided at 0 and 2.4, each leasing 0.1 s later.
    recorded = run(timeline, runtimes, {"q1": 1, "q2": 1}, instants=(0.0, 2.4), latency=0.1)
    starts = [(t, j) for t, what, j in recorded.seen if what == "start"]
    # A run holds its node from the decision until its recorded start plus its runtime.
    assert starts == [(0.0, "busy"), (2.4, "b"), (12.5, "a")]


def test_each_recorded_cycle_takes_its_own_latency() -> None:
    """The live cycle at 0 took 0.5 s to record its lease: ``a`` holds the slot until 10.5.
    The cycle that then starts ``b`` is the replay's own: it takes the default latency."""
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, NodeChange("ex", (node("n1", cpu=1),))),
        (0.0, job("a", "q", submitted=0)),
        (0.0, job("b", "q", submitted=0)),
    ]
    log = run(timeline, {"a": 10, "b": 10}, {"q": 1}, instants=(0.0,), latency=0.25, latencies=(0.5,))
    assert log.seen == [(0.0, "start", "a"), (10.5, "end", "a"), (10.5, "start", "b"), (20.75, "end", "b")]


def test_a_run_that_failed_fails_again_then_the_job_is_retried() -> None:
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, NodeChange("ex", (node("n1", cpu=1),))),
        (0.0, job("a", "q", submitted=0)),
        (1.0, job("b", "q", submitted=1)),
    ]
    log = run(timeline, {"a": 10, "b": 1}, {"q": 1}, failures={"a": (3.0, 2.0)})
    assert log.seen == [
        (0.0, "start", "a"),
        (3.0, "failed running", "a"),
        (3.0, "start", "a"),  # queued again, before b (submitted later)
        (5.0, "failed running", "a"),
        (5.0, "start", "a"),
        (15.0, "end", "a"),
        (15.0, "start", "b"),
        (16.0, "end", "b"),
    ]


def test_no_cycle_of_its_own_while_the_live_loop_was_not_deciding() -> None:
    """``a`` arrived at 1 with room; no live cycle leased until 3 (a loaded server): the
    replay runs a cycle of its own at the arrival unless the log shows the loop stalled."""
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, NodeChange("ex", (node("n1", cpu=1),))),
        (1.0, job("a", "q", submitted=1)),
    ]
    idle = run(timeline, {"a": 5}, {"q": 1}, instants=(3.0,), latency=0.1, latencies=(0.1,))
    assert (1.0, "start", "a") in idle.seen
    stalled = run(
        timeline, {"a": 5}, {"q": 1}, instants=(3.0,), latency=0.1, latencies=(0.1,), stalled=(1.0,)
    )
    assert (3.0, "start", "a") in stalled.seen
