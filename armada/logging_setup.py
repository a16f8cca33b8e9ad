"""Structured logging: console output for people at a terminal, JSON lines otherwise."""

from __future__ import annotations

import logging
import sys
from typing import Annotated, Any, Literal

import structlog
from msgspec import Meta

from armada.model.settings_area import SettingsArea


class LoggingSettings(SettingsArea):
    format: Annotated[
        Literal["auto", "console", "json"],
        Meta(description="Log format: console for people, json for machines, auto picks by terminal."),
    ] = "auto"
    level: Annotated[
        Literal["debug", "info", "warning", "error"], Meta(description="Lowest level logged.")
    ] = "info"


def configure_logging(settings: LoggingSettings, *, worker: int | None = None) -> None:
    """Route structlog and the standard library (uvicorn, alembic) through one renderer;
    each line of a ``serve --workers`` process names its ``worker``."""
    use_console = settings.format == "console" or (settings.format == "auto" and sys.stderr.isatty())
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if worker is not None:
        shared.append(_naming_worker(worker))
    structlog.configure(
        # Drop disabled levels first: a debug line per run must cost nothing at "warning".
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=LevelCheckedLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info if not use_console else _identity,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "alembic"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    # The server's few lifecycle lines (listening on, shutting down) are kept at any level:
    # operators and the tests rely on "Uvicorn running on URL" to know the server is up.
    logging.getLogger("uvicorn.error").setLevel(logging.INFO)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # One line per HTTP request (the executor's lease calls, every second or two) is
    # transport chatter, not news: httpx logs requests at info, so it logs at warning here.
    logging.getLogger("httpx").setLevel(logging.WARNING)


def _naming_worker(worker: int) -> structlog.types.Processor:
    def add(_logger: Any, _method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
        event["worker"] = worker
        return event

    return add


class LevelCheckedLogger(structlog.stdlib.BoundLogger):
    """A stdlib bound logger whose debug and info calls return before any work when their
    level is off: ``filter_by_level`` alone still ran the call chain up to it (~5 µs a line;
    a tenth of a fake executor's CPU went to debug lines nobody saw)."""

    def debug(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if not self._logger.isEnabledFor(logging.DEBUG):
            return None
        return super().debug(event, *args, **kw)

    def info(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if not self._logger.isEnabledFor(logging.INFO):
            return None
        return super().info(event, *args, **kw)


def _identity(
    _logger: object, _name: str, event_dict: structlog.types.EventDict
) -> structlog.types.EventDict:
    return event_dict
