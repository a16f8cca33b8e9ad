"""An open Lookout tab, or a watched job-set stream, does not hold ``armada serve`` when it is
told to stop (a rolling upgrade restarts each replica at once; the watcher resumes elsewhere)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import msgspec

from tests.e2e.cluster import job
from tests.processes import running_server


def test_live_update_streams_end_when_the_server_stops(tmp_path: Path) -> None:
    with running_server(tmp_path) as server, httpx.Client(timeout=60) as http:
        with http.stream("GET", f"{server.url}/api/v1/changes") as stream:
            lines = stream.iter_lines()
            assert next(lines) == "event: head"
            server.process.signal(signal.SIGTERM)
            rest = list(lines)  # ends when the server closes the stream
        assert server.process.wait(60) == 0
    assert all(line.startswith(("data:", ":", "event:")) or not line for line in rest)
    log = server.process.log()
    assert "graceful shutdown exceeded" not in log
    assert "Exception in ASGI application" not in log


def test_watched_job_set_streams_end_when_the_server_stops(tmp_path: Path) -> None:
    with running_server(tmp_path) as server, httpx.Client(timeout=60) as http:
        assert http.post(f"{server.url}/v1/queue", json={"name": "q", "priorityFactor": 1}).status_code == 200
        item = msgspec.to_builtins(job("true"))
        submitted = http.post(
            f"{server.url}/v1/job/submit", json={"queue": "q", "jobSetId": "s", "jobRequestItems": [item]}
        )
        assert submitted.status_code == 200, submitted.text
        with http.stream("POST", f"{server.url}/v1/job-set/q/s", json={"watch": True}) as stream:
            lines = stream.iter_lines()
            assert '"submitted"' in next(lines)
            server.process.signal(signal.SIGTERM)
            rest = list(lines)  # ends when the server closes the stream
        assert server.process.wait(60) == 0
    assert all('"result"' in line for line in rest if line)
    log = server.process.log()
    assert "graceful shutdown exceeded" not in log
    assert "Exception in ASGI application" not in log
