"""Tracing off (the default) makes no span; the endpoint without the extra is refused at start."""

from __future__ import annotations

import importlib.util

import pytest

from armada import tracing


def test_no_endpoint_no_span() -> None:
    tracing.configure_tracing(tracing.TracingSettings())
    assert tracing.span("armada.submit", queue="q") is tracing.span("armada.append")


def test_an_endpoint_without_the_extra_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = tracing.TracingSettings(endpoint="http://127.0.0.1:4318/v1/traces")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert tracing.missing_extra(settings) == tracing.MISSING
    assert tracing.missing_extra(tracing.TracingSettings()) is None
