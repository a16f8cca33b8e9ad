"""Log lines as backends answer :class:`~armada.model.leases.LogOrder`: parse and select.

Every backend produces Kubernetes' ``timestamps=true`` text (``<RFC 3339 time> <line>``
per line). Kubernetes applies the order's selection itself; the process and fake backends
apply it here, in the same order: ``sinceTime``/``sinceSeconds``, then ``tailLines``, then
``limitBytes``. Every answer is capped at the order's ``maxBytes`` (at most
:data:`ANSWER_MAX_BYTES`) of encoded JSON, keeping the newest lines.

Lines end at ``\n`` only (a ``\r`` before it, of CRLF, is dropped): a job's ``\r``, form feed
or U+2028 stays inside its line, so it cannot start a line of its own with a forged stamp.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from armada.model.leases import LogOrder
from armada.model.wire.logs import LogLine, newest_within

#: Most bytes of encoded log lines in one answer, whatever the order asks (the server's
#: request limit is 16 MiB by default; the server asks for less, ``scheduler.maxLogBytes``).
ANSWER_MAX_BYTES = 4 * 1024 * 1024


class LogMissing(Exception):
    """The cluster does not keep this log (any more): the user gets a 404 with the message."""


def stamp(moment: float) -> str:
    """``moment`` as Kubernetes stamps log lines: RFC 3339, UTC, nanoseconds."""
    whole = int(moment)
    nanos = round((moment - whole) * 1e9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{nanos:09d}Z"


def parse(text: str) -> list[LogLine]:
    """``<timestamp> <line>`` text as lines (a line without a timestamp keeps all its text)."""
    lines = []
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()  # the newline ending the last line
    for piece in pieces:
        raw = piece[:-1] if piece.endswith("\r") else piece
        moment, sep, line = raw.partition(" ")
        if sep and is_stamp(moment):
            lines.append(LogLine(timestamp=moment, line=line))
        else:
            lines.append(LogLine(line=raw))
    return lines


def select(lines: list[LogLine], order: LogOrder, now: float | None = None) -> list[LogLine]:
    """The lines ``order`` asks for, as Kubernetes would select them."""
    since = _since(order, time.time() if now is None else now)
    if since is not None:
        lines = [line for line in lines if (_when(line.timestamp) or since) >= since]
    if order.tail_lines is not None:
        lines = lines[max(0, len(lines) - order.tail_lines) :] if order.tail_lines else []
    if order.limit_bytes is not None:
        lines = _first_bytes(lines, order.limit_bytes)
    return cap(lines, order.max_bytes)


def cap(lines: list[LogLine], max_bytes: int | None = None) -> list[LogLine]:
    """The newest lines that fit in ``max_bytes`` (at most :data:`ANSWER_MAX_BYTES`) encoded."""
    return newest_within(lines, _answer_bytes(max_bytes))


def newest_needed(order: LogOrder) -> int | None:
    """How many of the newest bytes of a stamped log hold every line ``order`` can select;
    ``None``: the whole log (``limitBytes`` keeps the *first* bytes of the selection).

    Otherwise the answer is the newest selected lines within the cap, and a line takes no
    fewer bytes encoded (``{"timestamp":…,"line":…}``) than stamped in the log: reading
    more would only parse lines that are dropped."""
    return None if order.limit_bytes is not None else _answer_bytes(order.max_bytes)


def _answer_bytes(max_bytes: int | None) -> int:
    return min(max_bytes or ANSWER_MAX_BYTES, ANSWER_MAX_BYTES)


def _first_bytes(lines: list[LogLine], limit: int) -> list[LogLine]:
    kept, used = [], 0
    for line in lines:
        size = len(line.line.encode()) + 1
        if used + size > limit:
            rest = line.line.encode()[: max(0, limit - used)].decode(errors="ignore")
            if rest:
                kept.append(LogLine(timestamp=line.timestamp, line=rest))
            break
        kept.append(line)
        used += size
    return kept


def is_stamp(text: str) -> bool:
    """Whether ``text`` is a whole RFC 3339 log stamp."""
    return _when(text) is not None


def _since(order: LogOrder, now: float) -> datetime | None:
    bounds = []
    if order.since_time is not None:
        bounds.append(order.since_time)
    if order.since_seconds is not None:
        bounds.append(datetime.fromtimestamp(now - order.since_seconds, UTC))
    return max(bounds) if bounds else None


def _when(text: str) -> datetime | None:
    if not text[:4].isdigit():
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
