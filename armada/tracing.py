"""Optional OpenTelemetry spans, exported over OTLP/HTTP when ``tracing.endpoint`` is set.

Off by default, and then :func:`span` hands back one shared no-op context manager: no
OpenTelemetry import, no allocation. The packages are the ``tracing`` extra
(``pip install 'armada-scheduler[tracing]'``), so the base install does not grow.

Spans follow a job through the server: ``armada.submit``, ``armada.append`` (every write to
the log), ``armada.schedule`` (a cycle), ``armada.lease`` (an executor's lease call) and
``armada.run_report`` (an executor's run events). They share no parent across these steps
(each is its own request or cycle); attributes name the queue, executor or counts.
"""

from __future__ import annotations

import contextlib
import importlib.util
from typing import TYPE_CHECKING, Annotated, Any

from msgspec import Meta

from armada.model.settings_area import SettingsArea

if TYPE_CHECKING:
    from collections.abc import Iterator

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer


class TracingSettings(SettingsArea):
    endpoint: Annotated[
        str,
        Meta(
            description="OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces); empty: no "
            "tracing. Needs the tracing extra: pip install 'armada-scheduler[tracing]'."
        ),
    ] = ""
    service_name: Annotated[str, Meta(description="The service.name resource attribute of the spans.")] = (
        "armada"
    )


MISSING = (
    "tracing.endpoint is set but OpenTelemetry is not installed: pip install 'armada-scheduler[tracing]'"
)
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()
_tracer: Tracer | None = None
_provider: TracerProvider | None = None


def span(name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """A span named ``name`` around the ``with`` block, or nothing when tracing is off."""
    if _tracer is None:
        return _OFF
    return _tracer.start_as_current_span(name, attributes=attributes)


def missing_extra(settings: TracingSettings) -> str | None:
    """Why ``settings`` cannot be served (the endpoint set, the extra not installed), if so."""
    if settings.endpoint and importlib.util.find_spec("opentelemetry.sdk") is None:
        return MISSING
    return None


def configure_tracing(settings: TracingSettings) -> None:
    """Start exporting spans to ``settings.endpoint`` (nothing when it is empty)."""
    global _tracer, _provider
    if not settings.endpoint:
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
        from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415
    except ImportError as exc:
        raise RuntimeError(MISSING) from exc
    provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.endpoint)))
    _provider, _tracer = provider, provider.get_tracer("armada")


def shutdown_tracing() -> None:
    """Export what is pending and stop (tracing is off afterwards)."""
    global _tracer, _provider
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


@contextlib.contextmanager
def tracing(settings: TracingSettings) -> Iterator[None]:
    """Tracing configured for the ``with`` block (a server's lifetime)."""
    configure_tracing(settings)
    try:
        yield
    finally:
        shutdown_tracing()
