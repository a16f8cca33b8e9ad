"""The runs each executor reported holding, so that a lease call can send only the change.

A busy executor holds tens of thousands of runs and calls about once a second; sending and
parsing every held run on every call was more than half of the bytes the server parsed in
the end-to-end benchmark (docs/performance-notes.md). A call names its report (``reportId``); a
later call may send only the runs added since a report the server answered (``runsBase``)
and those gone (``runsGone``). Each replica keeps, per executor, the report a call built on
and the one it made, in memory: after an answer that was lost the executor builds on the
older one, which is still here. A base this replica does not hold (another replica took it,
this one restarted, it was evicted) or a change whose count disagrees resolves to ``None``:
the lease call then answers ``runsWanted`` and the executor sends the whole list at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Set

from armada.model.leases import LeaseRequest

#: Executors whose reports a replica keeps; the least recently heard from goes first (its
#: next call then costs one extra round trip with the whole list).
MAX_EXECUTORS = 1024


class HeldRunReports:
    """Each executor's last reports of held runs (report id → run ids), at most two, never
    changed once kept."""

    def __init__(self, max_executors: int = MAX_EXECUTORS) -> None:
        self._max_executors = max_executors
        self._reports: OrderedDict[str, dict[str, Set[str]]] = OrderedDict()

    def resolve(self, request: LeaseRequest) -> Set[str] | None:
        """The run ids ``request``'s executor holds, kept under its ``reportId``; ``None`` when
        it changes a report this replica does not hold, or its count disagrees."""
        if not request.runs_base:
            if request.report_id:
                self._keep(request.executor_id, {request.report_id: set(request.runs)})
            return request.runs.keys()
        base = self._reports.get(request.executor_id, {}).get(request.runs_base)
        if base is None:
            return None
        held = set(base)  # a copy: the base stays as it was, for a change retried after a lost answer
        held.difference_update(request.runs_gone)
        held.update(request.runs)
        if request.runs_held is not None and len(held) != request.runs_held:
            return None
        if request.report_id:
            self._keep(request.executor_id, {request.runs_base: base, request.report_id: held})
        return held

    def _keep(self, executor_id: str, reports: dict[str, Set[str]]) -> None:
        self._reports[executor_id] = reports
        self._reports.move_to_end(executor_id)
        while len(self._reports) > self._max_executors:
            self._reports.popitem(last=False)
