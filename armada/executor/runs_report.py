"""The runs an executor holds, by phase, and what its lease call says of them.

A busy executor holds tens of thousands of runs and calls about once a second, while only
a few hundred change between calls: the call sends the whole list only now and then, and
otherwise the change since the last report the server answered (``runsBase``: the runs
added, ``runsGone``, and ``runsHeld`` as a check). Changes are journaled as they happen, so
a report costs what changed, not what is held. The whole list goes out first, after an
answer asking for it (``runsWanted``: another replica answered, or the server restarted),
when the change would not be much smaller, and every ``FULL_REPORT_SECONDS`` whatever
happens, so that no disagreement the count cannot see outlives a minute.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from armada.model.lifecycle import RunPhase

#: Longest time between two reports of every held run.
FULL_REPORT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class RunsReport:
    """The lease call's fields about held runs (see ``LeaseRequest``)."""

    report_id: str
    runs: dict[str, RunPhase]
    runs_base: str = ""
    runs_gone: list[str] = field(default_factory=list)
    runs_held: int | None = None


class HeldRuns:
    """Held runs' phases by run id, and the journal of runs held and released since the
    report the server last answered."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.phases: dict[str, RunPhase] = {}
        self._clock = clock
        self._prefix = os.urandom(6).hex()
        self._numbers = itertools.count(1)
        #: (run id, held) since the report ``_base`` names, in order.
        self._changes: list[tuple[str, bool]] = []
        #: The report the server last answered ("": none, the next report is whole).
        self._base = ""
        #: The report in flight and how many changes it covers.
        self._sent: tuple[str, int] | None = None
        self._next_full = 0.0

    def hold(self, run_id: str, phase: RunPhase) -> None:
        self.phases[run_id] = phase
        self._changes.append((run_id, True))

    def release(self, run_id: str) -> None:
        del self.phases[run_id]
        self._changes.append((run_id, False))

    def report(self) -> RunsReport:
        """The next lease call's report; ``answered`` or ``unanswered`` must follow it."""
        report_id = f"{self._prefix}-{next(self._numbers)}"
        now = self._clock()
        if not self._base or now >= self._next_full or 2 * len(self._changes) >= len(self.phases):
            self._base, self._sent, self._next_full = "", (report_id, 0), now + FULL_REPORT_SECONDS
            self._changes.clear()  # from now on, changes since this report
            return RunsReport(report_id=report_id, runs=self.phases.copy())
        covered = len(self._changes)
        added: dict[str, None] = {}
        gone: list[str] = []
        for run_id, held in self._changes:
            if held:
                added[run_id] = None
            elif run_id in added:  # held and released since the base: no news
                del added[run_id]
            else:
                gone.append(run_id)
        self._sent = (report_id, covered)
        phases = self.phases
        return RunsReport(
            report_id=report_id,
            runs={run_id: phases[run_id] for run_id in added if run_id in phases},
            runs_base=self._base,
            runs_gone=gone,
            runs_held=len(phases),
        )

    def answered(self, *, runs_wanted: bool) -> None:
        """The server answered the report in flight: it is the base of the next one, unless
        the server asked for the whole list."""
        sent, self._sent = self._sent, None
        if runs_wanted or sent is None:
            self._base = ""
            return
        self._base, covered = sent
        del self._changes[:covered]

    def unanswered(self) -> None:
        """The call failed: the server may or may not hold the report in flight, so the next
        one builds on the last answered one again (the server keeps both)."""
        self._sent = None
