"""What a span costs: off (the default: ``tracing.endpoint`` unset) and on (exported over
OTLP/HTTP to a receiver on loopback that drops what it gets).

    python bench/tracing.py [--calls 200000] [--on-calls 2000] [--rounds 3]

Each round times ``--calls`` blocks ``with span("armada.append", lane="bulk"): pass``
against the same loop with an empty block, tracing off, then ``--on-calls`` with tracing on
(fewer: the exporter's queue holds 2,048 spans, and a full queue drops them);
rounds interleave the three and the figures are their medians, in nanoseconds per block. A
job's way through the server opens five spans (submit, append, schedule, lease, run
report), the cycle's and lease's shared by many jobs. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from armada import tracing


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


def _empty(calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        pass
    return time.perf_counter() - started


def _spans(calls: int) -> float:
    span = tracing.span
    started = time.perf_counter()
    for _ in range(calls):
        with span("armada.append", lane="bulk"):
            pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--on-calls", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    on = tracing.TracingSettings(endpoint=f"http://127.0.0.1:{sink.server_port}/v1/traces")
    empty, off, enabled = [], [], []
    for _ in range(args.rounds):
        empty.append(_empty(args.calls))
        off.append(_spans(args.calls))
        with tracing.tracing(on):
            enabled.append(_spans(args.on_calls) * args.calls / args.on_calls)
    sink.shutdown()

    def per_call(seconds: list[float]) -> float:
        return statistics.median(seconds) / args.calls * 1e9

    figures = {
        "calls": args.calls,
        "rounds": args.rounds,
        "empty_block_ns": round(per_call(empty), 1),
        "span_off_ns": round(per_call(off), 1),
        "span_on_ns": round(per_call(enabled), 1),
    }
    figures["off_cost_ns"] = round(figures["span_off_ns"] - figures["empty_block_ns"], 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
