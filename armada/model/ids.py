"""Identifiers: job ids are lower-case ULIDs, run ids UUIDs; both sortable by creation time.

Time-ordered keys keep the database's indexes appending at the end instead of splitting
pages at random, and let "order by job id" mean "order by submission". Ids are monotonic
within a process, as the ULID spec's monotonic mode: ids made in the same millisecond (a
whole submission, typically) count up from one random starting point, so they keep their
order too. Minting is bulk: one timestamp, one random draw, a base32 encoding per id.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time

from ulid import ULID

_RANDOM_BITS = 80
_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789abcdefghjkmnpqrstvwxyz")


class _Counter:
    """The last ULID value handed out by this process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last = 0


_counter = _Counter()


def _next_values(count: int) -> range:
    """``count`` consecutive 128-bit ULID values, all above any handed out before."""
    with _counter.lock:
        # One bit of headroom below the random part, so counting up never reaches the next ms.
        start = (time.time_ns() // 1_000_000) << _RANDOM_BITS | secrets.randbits(_RANDOM_BITS - 1)
        start = max(start, _counter.last + 1)
        _counter.last = start + count - 1
    return range(start, start + count)


def new_job_ids(count: int) -> list[str]:
    """``count`` lower-case ULIDs in increasing order."""
    # 20 bytes are 32 base32 digits; the first 6 only encode leading zero bits.
    return [
        base64.b32encode(value.to_bytes(20, "big"))[6:].translate(_CROCKFORD).decode()
        for value in _next_values(count)
    ]


def new_job_id() -> str:
    return new_job_ids(1)[0]


def new_run_id() -> str:
    return str(ULID.from_int(_next_values(1)[0]).to_uuid())
