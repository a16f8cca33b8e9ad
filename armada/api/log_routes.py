"""``POST /v1/binoculars/log``: a job's log, as upstream's Binoculars serves it.

Whoever may watch the job's queue may read it; a job in a queue the caller may not watch
reads as one that does not exist (404), as every job query does. Reads are counted against
their caller as open streams are (user name; anonymous callers per address).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, post
from litestar.params import JSONBody

from armada.api.dependencies import Logs, Reads
from armada.api.responses import problems
from armada.api.stream_quota import caller_key
from armada.auth.policy import watching
from armada.model.wire.logs import LogRequest, LogResponse


@post(
    "/v1/binoculars/log",
    responses=problems(),
    status_code=200,
    tags=["binoculars"],
    summary="Log lines of a job's latest run (or runId), running or finished",
    opt=watching(),
)
async def logs(
    data: JSONBody[LogRequest], logs: Logs, reads: Reads, request: Request[Any, Any, Any]
) -> LogResponse:
    return await logs.read(reads, data, caller_key(request))


ROUTES = [logs]
