"""Invariants of the log and the views, checked by ``armada admin check`` and the fault tests.

The log is the truth, so most rules are checked by folding it from the start: a job never
has two active runs at once, every run event names a run that was leased, a job moves only as
``model/lifecycle``'s ``JOB_MOVES`` allows (so it reaches at most one terminal state) and
keeps no active run after it. The views are then checked
against the same rules and, row for row, against a replay of the log done inside a
transaction that is rolled back, so the check changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import audit, dialects, schema
from armada.eventstore.rebuild import replay_into
from armada.eventstore.store import EventStore, StoredEvent
from armada.eventstore.unreadable import UnreadableRecords
from armada.model.events import ExecutorNode, UnreadableEvent
from armada.model.jobs import decode_job
from armada.model.lifecycle import JOB_STATE_AFTER, RUN_STATE_AFTER, JobState, job_moves
from armada.model.metadata import as_label_value
from armada.model.queues import QUEUE_NAME, Queue

READ_BATCH = 5000
#: Stop listing violations after this many; one is enough to fail, thousands help nobody.
MAX_VIOLATIONS = 100


@dataclass
class _Job:
    state: JobState = JobState.QUEUED
    active_runs: set[str] = field(default_factory=set)


@dataclass
class Report:
    """What a check looked at and every rule it found broken."""

    events: int = 0
    jobs: int = 0
    runs: int = 0
    violations: list[str] = field(default_factory=list)
    #: What an operator should know but that breaks no rule (the check still passes).
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def violation(self, message: str) -> None:
        if len(self.violations) < MAX_VIOLATIONS:
            self.violations.append(message)


class LogAudit:
    """Folds the log in order, recording every event that breaks a job or run rule."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.jobs: dict[str, _Job] = {}
        self.run_jobs: dict[str, str] = {}

    def feed(self, stored: Iterable[StoredEvent]) -> None:
        for seq, event in stored:
            self.report.events += 1
            if isinstance(event, UnreadableEvent):
                of_job = f" of job {event.job_id}" if event.job_id else ""
                self.report.violation(
                    f"seq {seq}: unreadable {event.stored_type} event{of_job}: {event.error}"
                )
                continue
            if not event.job_id:
                continue
            if event.type == "submitted":
                if event.job_id in self.jobs:
                    self.report.violation(f"seq {seq}: job {event.job_id} submitted twice")
                self.jobs[event.job_id] = _Job()
                continue
            job = self.jobs.get(event.job_id)
            if job is None:
                self.report.violation(f"seq {seq}: {event.type} for unknown job {event.job_id}")
                continue
            self._run_event(seq, event.type, event.job_id, event.run_id, job)
            self._job_event(seq, event.type, event.job_id, job)

    def _run_event(self, seq: int, kind: str, job_id: str, run_id: str, job: _Job) -> None:
        run_state = RUN_STATE_AFTER.get(kind)
        if run_state is None or not run_id:
            return
        if kind == "leased":
            if job.active_runs:
                self.report.violation(
                    f"seq {seq}: job {job_id} leased run {run_id} while run {min(job.active_runs)} is active"
                )
            if job.state.terminal:
                self.report.violation(f"seq {seq}: terminal job {job_id} leased again as run {run_id}")
            self.run_jobs[run_id] = job_id
            job.active_runs.add(run_id)
            return
        owner = self.run_jobs.get(run_id)
        if owner != job_id:
            self.report.violation(f"seq {seq}: {kind} names run {run_id}, which job {job_id} never leased")
        elif not run_state.active:
            job.active_runs.discard(run_id)

    def _job_event(self, seq: int, kind: str, job_id: str, job: _Job) -> None:
        state = JOB_STATE_AFTER.get(kind)
        if state is None:
            return
        if not job_moves(job.state, state):
            was = f"terminal {job.state}" if job.state.terminal else job.state
            self.report.violation(f"seq {seq}: job {job_id} moved from {was} to {state}")
        job.state = state

    def finish(self) -> None:
        for job_id, job in self.jobs.items():
            for run_id in sorted(job.active_runs) if job.state.terminal else ():
                self.report.violation(f"job {job_id} is {job.state} but run {run_id} is active")
        self.report.jobs = len(self.jobs)
        self.report.runs = len(self.run_jobs)


async def check(store: EventStore) -> Report:
    """Check the whole log, then the views, holding the append lock so both agree."""
    report = Report()
    async with store.engine.connect() as raw:
        conn = await raw.execution_options(**{dialects.WRITE_OPTION: True})
        transaction = await conn.begin()
        try:
            await dialects.lock_log(conn)
            log_audit = LogAudit(report)
            records = UnreadableRecords()
            after = 0
            while batch := await audit.log_batch(conn, after, records, READ_BATCH):
                log_audit.feed(batch)
                after = batch[-1].seq
            log_audit.finish()
            await _check_views(conn, report)
            await _check_view_records(conn, report)
            before = await audit.view_rows(conn)
            await replay_into(conn, records)
            _compare(before, await audit.view_rows(conn), report)
        finally:
            await transaction.rollback()
    return report


async def _check_view_records(conn: AsyncConnection, report: Report) -> None:
    """Every job, queue and node spec the views hold decodes as this version reads it."""
    decoders: dict[str, Callable[[Any], object]] = {
        "job": decode_job,
        "queue": _decoder(Queue),
        "node": _decoder(ExecutorNode),
    }
    for kind, rows in await audit.stored_specs(conn):
        decode = decoders[kind]
        for key, spec in rows:
            try:
                decode(spec)
            except msgspec.DecodeError as exc:
                report.violation(f"view: {kind} {key} has an unreadable spec: {exc}")
            if kind == "queue" and not QUEUE_NAME.match(key):
                report.warnings.append(
                    f"queue {key!r}: its name is not a Kubernetes label value (created before names "
                    f"were checked); its pods are labelled {as_label_value(key)!r} instead"
                )


def _decoder(kind: type[msgspec.Struct]) -> Callable[[Any], object]:
    return lambda data: msgspec.convert(data, kind)


async def _check_views(conn: AsyncConnection, report: Report) -> None:
    active_by_job: dict[str, list[str]] = {}
    for job_id, run_id in await audit.active_runs(conn):
        active_by_job.setdefault(job_id, []).append(run_id)
    for job_id, run_ids in active_by_job.items():
        if len(run_ids) > 1:
            report.violation(f"view: job {job_id} has {len(run_ids)} active runs {sorted(run_ids)}")
    for run_id, job_id in await audit.runs_of_missing_jobs(conn):
        report.violation(f"view: run {run_id} belongs to missing job {job_id}")
    for job_id, state in await audit.terminal_jobs_among(conn, list(active_by_job)):
        report.violation(f"view: job {job_id} is {state} but has an active run")


def _compare(
    live: dict[str, list[tuple[Any, ...]]], replayed: dict[str, list[tuple[Any, ...]]], report: Report
) -> None:
    for name, rows in live.items():
        again = replayed[name]
        if name in _ROLLUPS:
            if rows != again:  # derived figures behind the log, not a broken rule
                report.warnings.append(
                    f"usage rollup {name} differs from a replay of the log (runs counted by an older "
                    "version during a rolling upgrade): armada admin rebuild-views counts them again"
                )
            continue
        if len(rows) != len(again):
            report.violation(f"view {name}: {len(rows)} rows, a replay of the log gives {len(again)}")
            continue
        differing = [row[0] for row, other in zip(rows, again, strict=True) if row != other]
        if differing:
            report.violation(
                f"view {name}: {len(differing)} rows differ from a replay, e.g. {differing[0]!r}"
            )


#: The usage rollups: a difference from a replay is a warning (see docs/accounting.md).
_ROLLUPS = frozenset(table.name for table in schema.ROLLUPS)
