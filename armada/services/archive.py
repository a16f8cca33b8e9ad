"""The archive of pruned jobs: one gzip JSON Lines file per batch, synced before the delete.

A file is named after the jobs it holds, so a batch written again after a crash (between
the write and the delete) replaces its own file rather than adding a second one; a job
whose deletion was put off (it changed meanwhile) may appear in a later file again, never
in none. ``zcat FILE | jq`` reads one; so does ``armada admin archive show FILE``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from armada.eventstore.retention import ArchivedJob

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ArchivedJob)


def file_name(job_ids: Sequence[str]) -> str:
    """The batch's file name: its first job id and a digest of all of them."""
    digest = hashlib.sha256("\n".join(sorted(job_ids)).encode()).hexdigest()[:16]
    return f"pruned-{min(job_ids)}-{digest}.jsonl.gz"


def write_batch(directory: Path, jobs: Sequence[ArchivedJob]) -> Path:
    """Write ``jobs`` durably (file and directory synced) and return the file's path."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / file_name([job.job_id for job in jobs])
    partial = path.with_name(path.name + ".partial")
    # The owner's only: job specs may carry what their submitters would not show others.
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as raw:
        # mtime 0: the same batch gives the same bytes.
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as compressed:
            for job in jobs:
                compressed.write(_encoder.encode(job) + b"\n")
        raw.flush()
        os.fsync(raw.fileno())
    partial.replace(path)
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return path


def read_batch(path: Path) -> Iterator[ArchivedJob]:
    """The jobs of an archive file, in the order written."""
    with gzip.open(path, "rb") as lines:
        for line in lines:
            if line.strip():
                yield _decoder.decode(line)
