"""Run as a script (``python -I -S log_stamp.py OUTPUT MAX_BYTES``) by a process run's wrapper
shell, reading the run's stdout and stderr: each line is written to ``OUTPUT`` prefixed with
its arrival time, as Kubernetes stamps log lines (``timestamps=true``), so that logs can be
read ``since`` a time. Once ``OUTPUT`` holds half of ``MAX_BYTES`` it becomes ``OUTPUT.1``
(replacing the older half): a run's log never takes more than ``MAX_BYTES`` on disk.

It lives in the run's process group, so it survives an executor restart with the run and is
killed with it. Standard library only, and no ``site``: it starts in milliseconds.
"""

from __future__ import annotations

import os
import sys
import time

#: Longest piece of a line stamped at once (a longer line is cut into pieces).
PIECE_BYTES = 64 * 1024


def _stamp() -> bytes:
    nanos = time.time_ns()
    whole, rest = divmod(nanos, 1_000_000_000)
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{rest:09d}Z ").encode()


def main(path: str, max_bytes: int) -> None:
    half = max(1, max_bytes // 2)
    output = open(path, "ab", buffering=0)  # noqa: SIM115 (reopened on rotation)
    size = output.tell()
    source = sys.stdin.buffer
    while piece := source.readline(PIECE_BYTES):
        if not piece.endswith(b"\n"):
            piece += b"\n"
        record = _stamp() + piece
        if size + len(record) > half and size:
            output.close()
            os.replace(path, path + ".1")
            output = open(path, "ab", buffering=0)  # noqa: SIM115
            size = 0
        output.write(record)
        size += len(record)
    output.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
