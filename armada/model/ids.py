"""Identifiers: job ids are lower-case ULIDs, run ids UUIDs; both sortable by creation time.

Time-ordered keys keep the database's indexes appending at the end instead of splitting
pages at random. Job ids are minted in bulk on the submission path, so they are encoded
with the standard library's base32 (translated to Crockford's alphabet) rather than one
object per id.
"""

from __future__ import annotations

import base64
import os
import time

from ulid import ULID

_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789abcdefghjkmnpqrstvwxyz")


def new_job_ids(count: int) -> list[str]:
    """``count`` lower-case ULIDs: 48 bits of milliseconds, then 80 random bits each."""
    stamp = (time.time_ns() // 1_000_000) << 80
    entropy = os.urandom(10 * count)
    ids = []
    for offset in range(0, 10 * count, 10):
        value = stamp | int.from_bytes(entropy[offset : offset + 10], "big")
        # 20 bytes are 32 base32 digits; the first 6 only encode leading zero bits.
        ids.append(base64.b32encode(value.to_bytes(20, "big"))[6:].translate(_CROCKFORD).decode())
    return ids


def new_job_id() -> str:
    return new_job_ids(1)[0]


def new_run_id() -> str:
    return str(ULID().to_uuid())
