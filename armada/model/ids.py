"""Identifiers: job ids are lower-case ULIDs, run ids UUIDs; both sortable by creation time.

Time-ordered keys keep the database's indexes appending at the end instead of splitting
pages at random. Job ids are minted in bulk on the submission path, so a request's ids are
encoded together with numpy rather than one object (and one pure-Python base32) per id.
"""

from __future__ import annotations

import os
import time

import numpy as np
from ulid import ULID

_ALPHABET = np.frombuffer(b"0123456789abcdefghjkmnpqrstvwxyz", dtype=np.uint8)


def new_job_ids(count: int) -> list[str]:
    """``count`` lower-case ULIDs: 48 bits of milliseconds, then 80 random bits each."""
    ids = np.empty((count, 16), dtype=np.uint8)
    ids[:, :6] = np.frombuffer((time.time_ns() // 1_000_000).to_bytes(6, "big"), dtype=np.uint8)
    ids[:, 6:] = np.frombuffer(os.urandom(10 * count), dtype=np.uint8).reshape(count, 10)
    # 2 leading zero bits make 130 = 26 x 5 bits: one base32 digit per 5 bits.
    bits = np.zeros((count, 130), dtype=np.uint8)
    bits[:, 2:] = np.unpackbits(ids, axis=1)
    digits = bits.reshape(count, 26, 5) @ np.array([16, 8, 4, 2, 1], dtype=np.uint8)
    text = _ALPHABET[digits].tobytes().decode()
    return [text[i : i + 26] for i in range(0, 26 * count, 26)]


def new_job_id() -> str:
    return new_job_ids(1)[0]


def new_run_id() -> str:
    return str(ULID().to_uuid())
