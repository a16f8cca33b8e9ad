"""When the live scheduler's cycles decided, from what the log shows they leased.

The log records when a cycle's leases were written, not when the cycle decided: between the
two lie the cycle's catch-up, its computation and the building of its events, tens of
milliseconds that vary from cycle to cycle. A replayed cycle that decides too early misses
a submission or a run's end the live one saw; one that decides too late sees what the live
one did not. Either moves jobs by a whole cycle, and for waits of tens of milliseconds that
is most of the wait.

What a cycle leased bounds its decision from below: it had seen each job it leased become
ready (its submission, or the end of its previous run), each node it leased onto reported,
and on that node enough runs ended to make room (ends taken in the order they were
recorded). A cycle is taken to have decided at that bound: it saw what its leases show it
saw, and no more. A cycle whose leases show nothing since the cycle before it decided (what
it acted on is not in the log: a queue's settings changed, say) is taken to have decided the
median latency before its leases. Its leases were recorded at its instant.

What a cycle leased also shows when the live loop was not deciding: a job it leased that
was ready, with room on its node, since some time before, would have been leased by any
cycle deciding in between (with the recorded settings), so none did (a loaded server, a
slow write): the replay runs no cycle of its own there.

These are the cluster's timing, not its choices: under any settings the replay's cycles
decide at these times and their leases take effect at the recorded instants. Replayed with
the recorded settings, the core (deterministic) then decides what the live one did.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

#: Leases recorded closer together than this came from one cycle (its events' times differ
#: by the time it took to build them).
ONE_CYCLE = 0.02
#: A decision bound by an event is taken this much after it (and a time a lease was possible
#: from, this much before), so that the replay's own arithmetic (a run's end recomputed from
#: its start and runtime) cannot put the event on the wrong side of it.
ROUNDING = 1e-6


@dataclass(slots=True)
class _Hold:
    """A run's hold on a node, as recorded: leased at ``start``, ended at ``end``."""

    node: str
    start: float
    #: When the job and the node were last both ready for it, as far as the log shows.
    ready: float
    requests: dict[str, int]
    #: What the node offered Armada when the run was leased (allocatable less other pods').
    room: dict[str, int]
    end: float = math.inf


@dataclass(frozen=True)
class CycleTiming:
    """Per live cycle (in order): when it decided and when its leases were recorded."""

    decided: tuple[float, ...] = ()
    instants: tuple[float, ...] = ()
    #: From when the live loop could have made some of the cycle's leases (onto one of its
    #: nodes): it made none before, so it was not deciding between then and ``decided``.
    possible: tuple[float, ...] = ()

    @property
    def latencies(self) -> tuple[float, ...]:
        return tuple(i - d for d, i in zip(self.decided, self.instants, strict=True))


class CycleLog:
    """The leases of the window's jobs and their runs' ends, as the log is read."""

    def __init__(self) -> None:
        self._holds: list[_Hold] = []
        #: Each job's last run.
        self._last: dict[str, _Hold] = {}

    def leased(
        self, t: float, job_id: str, node: str, ready: float, requests: dict[str, int], room: dict[str, int]
    ) -> None:
        """``job_id`` leased onto ``node`` at ``t``; ``ready``: the later of the job's submission
        and the node's report; ``room``: what the node offered Armada."""
        previous = self._last.get(job_id)
        if previous is not None:
            ready = max(ready, previous.end)  # a retry: the job was queued again then
        hold = _Hold(node, t, ready, requests, room)
        self._holds.append(hold)
        self._last[job_id] = hold

    def ended(self, t: float, job_id: str) -> None:
        """The job's current run ended (a later event of the same run changes nothing)."""
        hold = self._last.get(job_id)
        if hold is not None and hold.end == math.inf:
            hold.end = t

    def timing(self, median_latency: float) -> CycleTiming:
        """Each cycle's decision: what it leased shows it saw (else the median latency before
        its instant), after the previous cycle's and not after its instant."""
        decided: list[float] = []
        instants: list[float] = []
        possible: list[float] = []
        on_node: dict[str, list[_Hold]] = defaultdict(list)
        last = -math.inf
        for cycle in self._cycles():
            instant = cycle[0].start
            seen, earliest = self._seen(cycle, on_node, last)
            if seen <= last:  # unexplained: no claim either on when its leases were possible
                seen = earliest = instant - median_latency
            earliest = max(earliest, last)
            last = min(instant, max(seen, math.nextafter(last, math.inf)))
            decided.append(last)
            instants.append(instant)
            possible.append(min(earliest, last))
            for hold in cycle:
                on_node[hold.node].append(hold)
        return CycleTiming(tuple(decided), tuple(instants), tuple(possible))

    def _cycles(self) -> list[list[_Hold]]:
        cycles: list[list[_Hold]] = []
        previous = -math.inf
        for hold in sorted(self._holds, key=lambda h: h.start):
            if hold.start - previous > ONE_CYCLE:
                cycles.append([])
            cycles[-1].append(hold)
            previous = hold.start
        return cycles

    @staticmethod
    def _seen(cycle: list[_Hold], on_node: dict[str, list[_Hold]], last: float) -> tuple[float, float]:
        """The latest event the cycle's leases show it had seen (a job or node becoming
        ready, or the end that made room on a node it leased onto), and the earliest time
        one of its leases could have been made (the first ready onto its node, with room)."""
        instant = cycle[0].start
        leased: dict[str, list[_Hold]] = defaultdict(list)
        for hold in cycle:
            leased[hold.node].append(hold)
        seen, earliest = -math.inf, math.inf
        for node, new in leased.items():
            # Runs that ended before the previous cycle decided were gone for this one too.
            held = on_node[node] = [h for h in on_node[node] if h.end > last]
            first = min(new, key=lambda h: h.ready)
            seen = max(seen, *(h.ready for h in new), _room_made(held, new, instant))
            earliest = min(earliest, max(first.ready, _room_made(held, [first], instant)))
        return seen + ROUNDING, earliest - ROUNDING


def _room_made(held: list[_Hold], new: list[_Hold], instant: float) -> float:
    """When enough of the runs ``held`` on a node had ended (in the order they ended, before
    ``instant``) for ``new`` to fit beside the others (``-inf``: they fit as it was, or never)."""
    over = _over(held + new, new[0].room)
    for hold in sorted((h for h in held if over and h.end < instant), key=lambda h: h.end):
        for resource, amount in hold.requests.items():
            if resource in over:
                over[resource] -= amount
        if all(amount <= 0 for amount in over.values()):
            return hold.end
    return -math.inf


def _over(holds: list[_Hold], room: dict[str, int]) -> dict[str, int]:
    """Per resource the node offers, how far ``holds`` ask beyond it (empty: they fit)."""
    asked: dict[str, int] = defaultdict(int)
    for hold in holds:
        for resource, amount in hold.requests.items():
            asked[resource] += amount
    over = {r: asked[r] - room[r] for r in asked if r in room}
    return over if any(amount > 0 for amount in over.values()) else {}
