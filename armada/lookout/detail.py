"""One job in full for the detail drawer: row, spec as YAML, runs and its event timeline.

The timeline is read from the log by job id (indexed), in the same shape as the job-set
event stream, so the drawer shows exactly what ``armada watch`` would for this job, plus
any of its events that cannot be read (type ``unreadable``, with the error).
"""

from __future__ import annotations

from typing import Any

import msgspec
import yaml
from sqlalchemy import select

from armada.eventstore import schema
from armada.eventstore.store import EventStore
from armada.eventstore.views import utc
from armada.lookout.jobs import job_row, rows_query
from armada.lookout.wire import JobDetail, RunView, TimelineEvent
from armada.model import events as ev
from armada.model.errors import NotFound
from armada.retries.history import retry_history

#: Most events shown for one job (a job that was requeued a hundred times has ~600).
MAX_EVENTS = 2000
#: Envelope fields every event of one job shares: the drawer shows them once, not per event.
_ENVELOPE = ("type", "created", "queue", "jobSetId", "jobId")


def _timeline_event(seq: int, event: ev.Event) -> TimelineEvent:
    fields: dict[str, Any] = msgspec.to_builtins(event)
    for name in _ENVELOPE:
        fields.pop(name, None)
    fields.pop("job", None)  # the submitted spec is shown as YAML already
    return TimelineEvent(id=str(seq), type=event.type, created=event.created, fields=fields)


def spec_yaml(spec: bytes) -> str:
    """The stored job spec (JSON) as YAML, keys in the order they were stored."""
    try:
        data = msgspec.json.decode(spec)
    except msgspec.DecodeError as exc:  # a damaged record: say so rather than fail the page
        return f"# the stored spec cannot be read: {exc}\n"
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


async def job_detail(store: EventStore, job_id: str) -> JobDetail:
    jobs, runs = schema.jobs, schema.runs
    extra = (jobs.c.spec, jobs.c.cancel_reason, jobs.c.cancel_user, jobs.c.attempts, jobs.c.gang_id)
    async with store.engine.connect() as conn:
        row = (await conn.execute(rows_query(jobs.c.job_id == job_id).add_columns(*extra))).first()
        if row is None:
            raise NotFound(f"job {job_id!r} does not exist", field="jobId")
        run_rows = (
            await conn.execute(select(runs).where(runs.c.job_id == job_id).order_by(runs.c.leased))
        ).all()
    stored = await store.read(0, job_id=job_id, limit=MAX_EVENTS)
    failures = [s.event for s in stored if isinstance(s.event, ev.JobFailed)]
    exposed = {
        s.event.run_id: s.event.ingress_addresses for s in stored if isinstance(s.event, ev.JobIngressInfo)
    }
    return JobDetail(
        job=job_row(row),
        spec_yaml=spec_yaml(row.spec),
        runs=[
            RunView(
                run_id=run.run_id,
                state=run.state,
                cluster=run.cluster,
                node=run.node,
                pool=run.pool,
                leased=utc(run.leased),
                pending=utc(run.pending),
                started=utc(run.started),
                finished=utc(run.finished),
                exit_code=run.exit_code,
                reason=run.reason or "",
                ingress_addresses=exposed.get(run.run_id, {}),
            )
            for run in run_rows
        ],
        events=[_timeline_event(s.seq, s.event) for s in stored],
        cancel_reason=row.cancel_reason or "",
        cancel_user=row.cancel_user or "",
        attempts=row.attempts,
        gang_id=row.gang_id or "",
        log_tail=failures[-1].log_tail if failures else "",
        retries=retry_history(s.event for s in stored),
    )
