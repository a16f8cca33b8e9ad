"""HTTP request metrics: count and latency per method, route template and status."""

from __future__ import annotations

import time

from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Histogram


class HttpMetrics(ASGIMiddleware):
    """Labels use the route template (``/v1/queue/{name:str}``) so ids never explode the series."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["method", "route", "status"]
        self.requests = Counter("armada_http_requests", "HTTP requests served.", labels, registry=registry)
        self.seconds = Histogram(
            "armada_http_request_duration_seconds",
            "Time to the start of the response (streams stay open longer).",
            labels,
            registry=registry,
        )
        #: Each label set's two children: ``labels()`` locks and builds a key on every call.
        self._children: dict[tuple[object, object, int], tuple[Histogram, Counter]] = {}

    def _observed(self, method: object, route: object, status: int) -> tuple[Histogram, Counter]:
        children = self._children.get((method, route, status))
        if children is None:
            labels = (str(method), str(route), str(status))
            children = self._children[(method, route, status)] = (
                self.seconds.labels(*labels),
                self.requests.labels(*labels),
            )
        return children

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        started = time.perf_counter()
        status = 500

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                seconds, _ = self._observed(scope.get("method", ""), scope.get("path_template", ""), status)
                seconds.observe(time.perf_counter() - started)
            await send(message)

        try:
            await next_app(scope, receive, observed_send)
        finally:
            self._observed(scope.get("method", ""), scope.get("path_template", ""), status)[1].inc()
