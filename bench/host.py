"""How fast this host is, so that figures from different hosts can be compared.

    python bench/host.py [--database-url postgresql://postgres@127.0.0.1:5432/postgres]

The goal benchmarks run at the pace of one core of Python and of PostgreSQL, and hosts of
the same kind have differed by up to 2x in CPU per job for the same code
(docs/performance.md, "How to read these figures"). Run this next to a goal
benchmark and quote both: ``python_loop_s`` is the CPU time of a fixed pure-Python loop,
``json_decode_mb_per_s`` msgspec's rate on a lease call's body (10,000 held runs), and with a
PostgreSQL URL ``postgres_series_s`` the wall time of a CPU-bound query (a sum over 5,000,000
generated rows) and ``postgres_round_trip_ms`` that of ``SELECT 1``. Each is the median of
three. The last line is JSON.
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec
import psycopg

from armada.eventstore.dialects import libpq_conninfo
from bench.common import arguments, report

REPEATS = 3


def median_of(measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(REPEATS))


def python_loop() -> float:
    """CPU seconds of 10,000,000 additions in a Python loop."""
    started = time.process_time()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.process_time() - started


def lease_body() -> bytes:
    runs = {str(uuid.uuid4()): "running" for _ in range(10_000)}
    call = {"executorId": "cluster-0", "pool": "default", "runs": runs, "maxNewLeases": 500}
    return msgspec.json.encode(call)


def json_decode(body: bytes) -> float:
    """MB/s of generic msgspec decoding of ``body`` (100 decodes)."""
    started = time.process_time()
    for _ in range(100):
        msgspec.json.decode(body)
    return 100 * len(body) / 1e6 / (time.process_time() - started)


def postgres_figures(url: str) -> dict[str, float]:
    with psycopg.connect(libpq_conninfo(url), autocommit=True) as conn:

        def series() -> float:
            started = time.perf_counter()
            conn.execute("SELECT sum(i) FROM generate_series(1, 5000000) AS i").fetchone()
            return time.perf_counter() - started

        def round_trip() -> float:
            started = time.perf_counter()
            for _ in range(1000):
                conn.execute("SELECT 1").fetchone()
            return time.perf_counter() - started  # seconds per 1,000 = ms per call

        return {
            "postgres_series_s": round(median_of(series), 3),
            "postgres_round_trip_ms": round(median_of(round_trip), 3),
        }


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--database-url", default="", help="also measure this PostgreSQL server")
    args = parser.parse_args()
    body = lease_body()
    result: dict[str, object] = {
        "benchmark": "host",
        "python_loop_s": round(median_of(python_loop), 3),
        "json_decode_mb_per_s": round(median_of(lambda: json_decode(body)), 1),
    }
    if args.database_url:
        result.update(postgres_figures(args.database_url))
    report(result)


if __name__ == "__main__":
    main()
