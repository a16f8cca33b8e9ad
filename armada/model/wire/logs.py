"""Bodies of ``POST /v1/binoculars/log``: upstream Binoculars' ``LogRequest``/``LogResponse``.

``logOptions`` carries the fields of Kubernetes' ``PodLogOptions`` that Binoculars honours;
``follow`` is accepted for compatibility and ignored: every call answers what the cluster
holds now (a client follows by asking again with ``sinceTime``, as Lookout and
``armada logs --follow`` do).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from armada.model.numbers import Count
from armada.model.wire.base import Request, Response

#: A job, run or container name, as long as the longest the store or Kubernetes keeps.
Name = Annotated[str, msgspec.Meta(max_length=253)]


class LogOptions(Request):
    """Which part of the log: Kubernetes ``PodLogOptions`` names and meanings."""

    #: Container to read; empty: the pod's first container.
    container: Name = ""
    #: Only the last N lines.
    tail_lines: Count | None = None
    #: Only lines written in the last N seconds.
    since_seconds: Count | None = None
    #: Accepted for compatibility: every line carries its timestamp in ``timestamp`` anyway.
    timestamps: bool = False
    #: The previous (crashed) instance of a restarted container.
    previous: bool = False
    #: At most N bytes of log text (counted from the first line selected).
    limit_bytes: Count | None = None
    #: Accepted for compatibility and ignored (see the module docstring).
    follow: bool = False


class LogRequest(Request):
    #: Required (checked by the service, so that its absence is a 400 naming it).
    job_id: Name = ""
    #: The run to read (not upstream's); empty: the job's latest run.
    run_id: Name = ""
    #: Upstream's pod of a multi-pod job; jobs here have one pod, number 0.
    pod_number: Count = 0
    #: Upstream's pod namespace; empty or the job's own namespace.
    pod_namespace: Name = ""
    #: RFC 3339 time: only lines written after it (``sinceTime`` of ``PodLogOptions``).
    since_time: Annotated[str, msgspec.Meta(max_length=64)] = ""
    log_options: LogOptions = msgspec.field(default_factory=LogOptions)


class LogLine(Response):
    """One line of output; ``timestamp`` is RFC 3339 with nanoseconds when known."""

    timestamp: str = ""
    line: str = ""


class LogResponse(Response):
    log: list[LogLine] = []


_encode_line = msgspec.json.Encoder().encode


def newest_within(lines: list[LogLine], max_bytes: int) -> list[LogLine]:
    """The newest of ``lines`` whose JSON encoding (``[line,line,…]``) fits in ``max_bytes``.

    Counted in encoded bytes, not characters: a line of control characters or of multi-byte
    characters takes up to six times its length on the wire, and the cap bounds the answer
    each side holds and sends."""
    total = 1
    for index in range(len(lines) - 1, -1, -1):
        total += len(_encode_line(lines[index])) + 1
        if total > max_bytes:
            return lines[index + 1 :]
    return lines
