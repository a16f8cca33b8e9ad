"""Where appends spend their time, by lane: queued for the lock, their own turn, the commit.

Under load a write's latency is mostly waiting (see :mod:`.writelock`); these sums, per
lane, say whether a client's write waits for the lock or for its group's commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from armada.eventstore.writelock import Lane


@dataclass(slots=True)
class LaneTimes:
    """Sums over one lane's committed or failed writes."""

    writes: int = 0
    #: Seconds from asking for the lock (or a turn in the open group) to getting it.
    queued: float = 0.0
    #: Seconds of the writers' own turns (their reads and checks inside the transaction).
    turn: float = 0.0
    #: Seconds from the end of a turn until its group's commit was known.
    commit: float = 0.0


@dataclass(slots=True)
class LaneWaits:
    lanes: dict[Lane, LaneTimes] = field(default_factory=lambda: {lane: LaneTimes() for lane in Lane})

    def add(self, lane: Lane, queued: float, turn: float, commit: float) -> None:
        times = self.lanes[lane]
        times.writes += 1
        times.queued += queued
        times.turn += turn
        times.commit += commit
