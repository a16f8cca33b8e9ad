"""Disabled log levels cost nothing, enabled ones still print."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from armada.logging_setup import LevelCheckedLogger, LoggingSettings, configure_logging


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


@pytest.mark.usefixtures("restore_logging")
def test_debug_and_info_lines_return_before_any_processor_when_their_level_is_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(LoggingSettings(level="warning", format="json"))
    calls: list[str] = []

    def spy(_logger: object, _name: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
        calls.append(str(event["event"]))
        return event

    structlog.configure(processors=[spy, *structlog.get_config()["processors"]])
    log = structlog.get_logger("test").bind(run_id="r1")
    log.debug("quiet")
    log.info("quiet too")
    log.warning("loud")
    assert calls == ["loud"], "debug and info never reached the processors"
    assert '"loud"' in capsys.readouterr().err


@pytest.mark.usefixtures("restore_logging")
def test_enabled_debug_lines_print(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(LoggingSettings(level="debug", format="json"))
    log = structlog.get_logger("test")
    assert structlog.get_config()["wrapper_class"] is LevelCheckedLogger
    log.debug("shown", run_id="r1")
    log.info("also shown")
    err = capsys.readouterr().err
    assert '"shown"' in err and '"r1"' in err and '"also shown"' in err
