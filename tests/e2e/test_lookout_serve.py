"""An open Lookout tab does not hold ``armada serve`` when it is told to stop."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx

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
