"""Bounds on the submission time as bounds on the job id, which the primary key and every
``(…, job_id)`` index serve.

A page of jobs submitted before a time, newest first, walks the job id index from the
newest job down to that time, reading and discarding every later job: ``submitted`` has no
index, and one would cost every submission another entry. But job ids are ULIDs minted at
submission, so a bound on ``submitted`` implies one on the id, and the walk can start there.
The exact condition on ``submitted`` stays; the id bound only has to let every match
through, widened by :data:`SLACK`. Why an id's time tracks its submission time:

- Jobs are created only by the submission path (REST and gRPC, upstream's API included):
  clients cannot choose job ids (a client id is a separate column), nothing imports jobs,
  and rebuilding the views replays the stored events, whose ``created`` is the
  ``submitted`` they had. That path (:func:`armada.services.submission._jobs`) mints the ids
  at the submission time, in its millisecond; after a clock step back the id counter stays
  ahead of the clock and the submission time is taken from the ids instead. So an id's
  millisecond is at most 1 ms before its job's ``submitted``, and never after.
- Versions before this one read the clock for ``submitted`` just before minting the ids,
  so their ids lie at most that instant (and any clock step back while the server ran,
  which the counter kept them ahead of) after ``submitted``. :data:`SLACK` covers both.

Ids that are not ULIDs (tests name jobs freely) are never stored by a server.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement

from armada.eventstore import schema
from armada.model.ids import time_prefix

#: How far an id's time may lie from its job's submission time, either way.
SLACK = timedelta(minutes=10)
#: The id bound of ``submitted < t`` includes the millisecond ``t + SLACK`` lies in.
_MILLISECOND = timedelta(milliseconds=1)


def submitted_from(moment: datetime) -> ColumnElement[bool]:
    """What ``submitted >= moment`` (or ``>``) implies for the job id."""
    return schema.jobs.c.job_id >= time_prefix(moment - SLACK)


def submitted_before(moment: datetime) -> ColumnElement[bool]:
    """What ``submitted < moment`` (or ``<=``) implies for the job id."""
    return schema.jobs.c.job_id < time_prefix(moment + SLACK + _MILLISECOND)
