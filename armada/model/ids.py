"""Identifiers: job ids are lower-case ULIDs, run ids UUIDs; both sortable by creation time.

Time-ordered keys keep the database's indexes appending at the end instead of splitting
pages at random, and let "order by job id" mean "order by submission". Ids are monotonic
within a process, as in the ULID spec's monotonic mode: the ids of one call count up from
one random starting point, and every call starts above the last id handed out, so a
request's jobs keep their order even within a millisecond. Job ids are minted in bulk on
the submission path and encoded together with numpy (base32 in Python 3.11 is pure Python).
"""

from __future__ import annotations

import secrets
import threading
import time

import numpy as np
from ulid import ULID

_RANDOM_BITS = 80
_LOW_MASK = (1 << 64) - 1
_ALPHABET = np.frombuffer(b"0123456789abcdefghjkmnpqrstvwxyz", dtype=np.uint8)
_BIT_WEIGHTS = np.array([16, 8, 4, 2, 1], dtype=np.uint8)


class _Counter:
    """The last ULID value handed out by this process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last = 0


_counter = _Counter()


def _first_value(count: int) -> int:
    """Reserve ``count`` consecutive 128-bit ULID values above any handed out before."""
    with _counter.lock:
        # One bit of headroom in the random part, so counting up never reaches the next ms.
        start = (time.time_ns() // 1_000_000) << _RANDOM_BITS | secrets.randbits(_RANDOM_BITS - 1)
        start = max(start, _counter.last + 1)
        _counter.last = start + count - 1
    return start


def new_job_ids(count: int) -> list[str]:
    """``count`` lower-case ULIDs in increasing order."""
    start = _first_value(count)
    low = np.uint64(start & _LOW_MASK) + np.arange(count, dtype=np.uint64)  # may wrap: carry below
    high = (start >> 64) + (low < np.uint64(start & _LOW_MASK)).astype(np.uint64)
    raw = np.empty((count, 16), dtype=np.uint8)
    raw[:, :8] = high.astype(">u8").view(np.uint8).reshape(count, 8)
    raw[:, 8:] = low.astype(">u8").view(np.uint8).reshape(count, 8)
    # 2 leading zero bits make 130 = 26 x 5 bits: one base32 digit per 5 bits.
    bits = np.zeros((count, 130), dtype=np.uint8)
    bits[:, 2:] = np.unpackbits(raw, axis=1)
    digits = bits.reshape(count, 26, 5) @ _BIT_WEIGHTS
    text = _ALPHABET[digits].tobytes().decode()
    return [text[i : i + 26] for i in range(0, 26 * count, 26)]


def new_job_id() -> str:
    return new_job_ids(1)[0]


def new_run_id() -> str:
    return str(ULID.from_int(_first_value(1)).to_uuid())
