"""Log-read amplification (issue 34, finding 5): a chatty job's log read by ten callers at once.

    python bench/log_amplification.py               # 3 fresh systems, medians reported

``armada serve --dev`` (server and process executor in one process, as the review ran it)
on SQLite; one job prints ~2 MB/s of 100-character lines, so its log holds the executor's
whole ``logMaxBytes`` by the time it is read. Then, per system: the server's RSS and
another queue's job-status latency while nothing reads logs (idle, ``--idle-seconds``),
and again while ten clients send 40-byte ``POST /v1/binoculars/log`` requests for
``--load-seconds``, each as soon as its last was answered. A client refused (429) waits
what ``Retry-After`` says: the benchmark measures what a read costs, not a flood of
requests (which costs the same on any route). RSS is sampled every 50 ms; the load figure
is its peak. The goal: load within 20% of idle for both. The last line is JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import report
from bench.e2e import SERVER_ENV
from tests.e2e.cluster import job
from tests.processes import ArmadaProcess, free_port, wait_until_healthy

#: Both jobs end by themselves within minutes, should the server stop before it kills them.
CHATTY = (
    "exec python3 -c 'import sys, time\n"
    "end = time.time() + 300\n"
    "while time.time() < end:\n"
    '    sys.stdout.write(("x" * 100 + "\\n") * 2000); sys.stdout.flush(); time.sleep(0.1)\''
)
CLIENTS = 10


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class Sampler(threading.Thread):
    """Samples the server's RSS and the other team's status-call latency until stopped."""

    def __init__(self, base: str, pid: int, job_id: str) -> None:
        super().__init__(daemon=True)
        self.base, self.pid, self.job_id = base, pid, job_id
        self.stop = threading.Event()
        self.rss: list[float] = []
        self.latencies: list[float] = []
        #: How long the measured phase lasted.
        self.seconds = 0.0

    def run(self) -> None:
        rss = threading.Thread(target=self._rss, daemon=True)
        rss.start()
        with httpx.Client(base_url=self.base, timeout=120) as client:
            while not self.stop.is_set() or len(self.latencies) < 5:
                started = time.perf_counter()
                response = client.post("/v1/job/status", json={"jobIds": [self.job_id]})
                response.raise_for_status()
                self.latencies.append(time.perf_counter() - started)
                time.sleep(0.05)
        rss.join()

    def _rss(self) -> None:
        while not self.stop.is_set():
            self.rss.append(rss_mb(self.pid))
            time.sleep(0.05)


def sampled(base: str, pid: int, job_id: str, during: Any) -> Sampler:
    sampler = Sampler(base, pid, job_id)
    started = time.perf_counter()
    sampler.start()
    try:
        during()
    finally:
        sampler.seconds = time.perf_counter() - started
        sampler.stop.set()
        sampler.join()
    return sampler


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))]


def read_logs(base: str, job_id: str, until: float, outcomes: list[tuple[int, int]]) -> None:
    with httpx.Client(base_url=base, timeout=120) as client:
        while time.monotonic() < until:
            response = client.post("/v1/binoculars/log", json={"jobId": job_id})
            outcomes.append((response.status_code, len(response.content)))
            if response.status_code == 429:
                time.sleep(float(response.headers.get("Retry-After", "1")))


def submit(base: str, queue: str, command: str) -> str:
    item = job(command, cpu="100m")
    httpx.post(f"{base}/v1/queue", json={"name": queue, "priorityFactor": 1}, timeout=30).raise_for_status()
    body = {"queue": queue, "jobSetId": "bench", "jobRequestItems": [msgspec.to_builtins(item)]}
    response = httpx.post(f"{base}/v1/job/submit", json=body, timeout=30)
    response.raise_for_status()
    job_id: str = response.json()["jobResponseItems"][0]["jobId"]
    return job_id


def wait_running(base: str, job_id: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        states = httpx.post(f"{base}/v1/job/status", json={"jobIds": [job_id]}, timeout=30).json()
        if states.get("jobStates", {}).get(job_id) == "RUNNING":
            return
        time.sleep(0.2)
    raise TimeoutError(f"job {job_id} did not start")


def one_system(args: argparse.Namespace) -> dict[str, float]:
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="armada-bench-logamp-")))
        port = free_port()
        server = ArmadaProcess(
            ["serve", "--dev", "--port", str(port), "--database-url", f"sqlite:///{workdir / 'armada.db'}"],
            cwd=workdir,
            log_path=workdir / "serve.log",
            env={**SERVER_ENV, **{f"ARMADA_SCHEDULER_{k}": v for k, v in args.setting}},
        )
        stack.callback(server.stop)
        base = f"http://127.0.0.1:{port}"
        wait_until_healthy(base, server)
        chatty = submit(base, "team-a", CHATTY)
        other = submit(base, "team-b", "sleep 300")
        for job_id in (chatty, other):
            wait_running(base, job_id)
        time.sleep(args.fill_seconds)  # the log reaches the executor's cap
        pid = server.process.pid
        idle = sampled(base, pid, other, lambda: time.sleep(args.idle_seconds))
        outcomes: list[tuple[int, int]] = []

        def load() -> None:
            until = time.monotonic() + args.load_seconds
            clients = [
                threading.Thread(target=read_logs, args=(base, chatty, until, outcomes), daemon=True)
                for _ in range(CLIENTS)
            ]
            for client in clients:
                client.start()
            for client in clients:
                client.join()

        loaded = sampled(base, pid, other, load)
        for job_id, queue in ((chatty, "team-a"), (other, "team-b")):
            body = {"queue": queue, "jobSetId": "bench", "jobIds": [job_id]}
            httpx.post(f"{base}/v1/job/cancel", json=body, timeout=30)
        time.sleep(3)  # the executor kills them (else they end by themselves)
    ok = [size for status, size in outcomes if status == 200]
    return {
        "idle_rss_mb": max(idle.rss),
        "load_peak_rss_mb": max(loaded.rss),
        "idle_status_p50_ms": statistics.median(idle.latencies) * 1000,
        "idle_status_p95_ms": _p95(idle.latencies) * 1000,
        "load_status_p50_ms": statistics.median(loaded.latencies) * 1000,
        "load_status_p95_ms": _p95(loaded.latencies) * 1000,
        "load_status_max_ms": max(loaded.latencies) * 1000,
        "load_seconds": loaded.seconds,
        "reads_ok": len(ok),
        "reads_429": sum(1 for status, _ in outcomes if status == 429),
        "reads_other": sum(1 for status, _ in outcomes if status not in (200, 429)),
        "largest_answer_mb": max(ok, default=0) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh systems measured (medians reported)")
    parser.add_argument("--load-seconds", type=float, default=10.0, help="how long the clients read")
    parser.add_argument("--fill-seconds", type=float, default=8.0, help="job output before measuring")
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument(
        "--setting",
        nargs=2,
        action="append",
        default=[],
        metavar=("FIELD", "VALUE"),
        help="a server setting to try, e.g. --setting MAX_LOG_BYTES 262144 (ARMADA_SCHEDULER_<FIELD>)",
    )
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeats):
        runs.append(one_system(args))
        print(runs[-1], flush=True)
    medians = {key: round(statistics.median(run[key] for run in runs), 1) for key in runs[0]}
    medians["rss_ratio"] = round(medians["load_peak_rss_mb"] / medians["idle_rss_mb"], 2)
    medians["status_p50_ratio"] = round(medians["load_status_p50_ms"] / medians["idle_status_p50_ms"], 2)
    medians["status_p95_ratio"] = round(medians["load_status_p95_ms"] / medians["idle_status_p95_ms"], 2)
    report({"benchmark": "log_amplification", "clients": CLIENTS, "repeats": args.repeats, **medians})


if __name__ == "__main__":
    main()
