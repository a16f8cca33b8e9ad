"""With ``tracing.endpoint`` set, a job's way through the server is exported as OTLP spans to a
real HTTP receiver (on SQLite and PostgreSQL)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from armada import tracing
from armada.model.leases import RunEvent, RunEventBatch
from armada.model.wire.jobs import JobSubmitRequest, JobSubmitRequestItem
from armada.services.submission import submit_jobs
from armada.services.validation import SubmissionRules
from armada.settings import load_settings
from tests.harness import Harness, scheduled

pytest.importorskip("opentelemetry.sdk", reason="the tracing extra is not installed")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

RESOURCES = {"cpu": "1", "memory": "1Gi"}
POD = {
    "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": RESOURCES, "limits": RESOURCES}}
    ]
}


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP traces endpoint: keeps each request's span names."""

    spans: list[str]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        self.spans.extend(
            span.name for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@contextlib.contextmanager
def receiver() -> Iterator[tuple[str, list[str]]]:
    spans: list[str] = []
    handler = type("Handler", (_Receiver,), {"spans": spans})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/traces", spans
    finally:
        server.shutdown()
        server.server_close()


async def test_submit_append_schedule_lease_and_run_report_are_exported(harness: Harness) -> None:
    h = harness
    settings = load_settings(env={})
    with receiver() as (endpoint, spans):
        with tracing.tracing(tracing.TracingSettings(endpoint=endpoint, service_name="armada-test")):
            request = JobSubmitRequest(
                queue="q",
                job_set_id="s",
                job_request_items=[JobSubmitRequestItem(namespace="default", pod_spec=POD)],
            )
            await submit_jobs(h.database.store, request, SubmissionRules.from_settings(settings), "alice")
            [lease] = await scheduled(h)
            running = RunEvent(run_id=lease.run_id, job_id=lease.job_id, kind="running")
            await h.intake.report(RunEventBatch(executor_id="c1", events=[running]))
        # Leaving the block flushed the exporter.
        assert {
            "armada.submit",
            "armada.append",
            "armada.schedule",
            "armada.lease",
            "armada.run_report",
        } <= set(spans)
