"""Which state-changing requests the CSRF check refuses, header by header (no server)."""

from __future__ import annotations

import pytest

from armada.api.browser_safety import BrowserSafety

JSON = {"content-type": "application/json", "content-length": "2"}


def refused(
    headers: dict[str, str], method: str = "POST", allowed: tuple[str, ...] = ()
) -> tuple[int, str] | None:
    raw = [(name.encode(), value.encode()) for name, value in headers.items()]
    refusal = BrowserSafety(allowed).refusal(method, raw)
    return None if refusal is None else (refusal.status, refusal.header)


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("http://127.0.0.1:8080", "127.0.0.1:8080"),
        ("https://armada.example.com", "armada.example.com"),
        ("https://armada.example.com", "armada.example.com:443"),  # a proxy that names the port
        ("HTTPS://Armada.Example.com", "armada.example.com"),
    ],
)
def test_the_servers_own_origin_passes(origin: str, host: str) -> None:
    assert refused({**JSON, "origin": origin, "host": host, "sec-fetch-site": "same-origin"}) is None


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "http://127.0.0.1:9999",
        "null",
        "file://",
        "armada.example.com",
        "https://armada.example.com.evil.example",
    ],
)
def test_a_foreign_origin_is_refused(origin: str) -> None:
    assert refused({**JSON, "origin": origin, "host": "armada.example.com"}) == (403, "Origin")


def test_cross_site_is_refused_unless_the_origin_is_allowed_for_cors() -> None:
    headers = {**JSON, "sec-fetch-site": "cross-site", "origin": "https://ui.example", "host": "api.example"}
    assert refused(headers) == (403, "Sec-Fetch-Site")
    assert refused(headers, allowed=("https://ui.example/",)) is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"content-type": "text/plain", "content-length": "2"}, (415, "Content-Type")),
        ({"content-type": "application/json; charset=utf-8", "content-length": "2"}, None),
        ({"content-type": "application/jsonp", "content-length": "2"}, (415, "Content-Type")),
        ({"content-length": "2"}, (415, "Content-Type")),
        ({"transfer-encoding": "chunked"}, (415, "Content-Type")),
        ({}, None),  # no body: DELETE /v1/queue/x, cordon
        ({"content-length": "0"}, None),
        ({"content-type": "application/x-www-form-urlencoded", "content-length": "0"}, (415, "Content-Type")),
    ],
)
def test_bodies_must_be_json(headers: dict[str, str], expected: tuple[int, str] | None) -> None:
    assert refused(headers) == expected


def test_reads_are_never_refused() -> None:
    assert refused({"sec-fetch-site": "cross-site", "origin": "https://evil.example"}, method="GET") is None
