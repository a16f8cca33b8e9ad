"""``/metrics`` over real HTTP: its labels name every queue, so by default it is public only
while the server binds loopback; elsewhere it takes ``view_reports`` unless
``auth.publicMetrics`` says otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import msgspec
import pytest

from armada.auth.settings import AuthSettings
from armada.settings import Settings, load_settings
from tests.databases import sqlite_url
from tests.processes import ROOT
from tests.servers import ApiServer, serving

DEFAULT = AuthSettings().public_metrics


@contextmanager
def server_on(tmp_path: Path, host: str, public_metrics: bool | None = DEFAULT) -> Iterator[ApiServer]:
    """The example users' server (``publicMetrics`` as given, else its default), configured to
    bind ``host`` (the test connects over loopback: the server decides from its settings, as it
    does when it really binds there)."""
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    settings = msgspec.structs.replace(
        settings,
        auth=msgspec.structs.replace(settings.auth, public_metrics=public_metrics),
        server=msgspec.structs.replace(settings.server, host=host),
    )
    with serving(sqlite_url(tmp_path), settings) as running:
        yield running


def scrape(server: ApiServer, user: str | None = None) -> httpx.Response:
    auth = (user, f"{user}-pass") if user else None
    return httpx.get(f"{server.url}/metrics", auth=auth, timeout=30)


def test_off_loopback_metrics_need_view_reports_by_default(tmp_path: Path) -> None:
    with server_on(tmp_path, "0.0.0.0") as server:
        anonymous = scrape(server)
        assert anonymous.status_code == 401, anonymous.text
        assert anonymous.headers["www-authenticate"].startswith("Basic")
        assert scrape(server, "alice").status_code == 403  # no view_reports
        assert scrape(server, "admin").status_code == 200


@pytest.mark.parametrize(("host", "public_metrics"), [("127.0.0.1", DEFAULT), ("0.0.0.0", True)])
def test_metrics_are_public_on_loopback_or_when_configured(
    tmp_path: Path, host: str, public_metrics: bool | None
) -> None:
    with server_on(tmp_path, host, public_metrics) as server:
        response = scrape(server)
        assert response.status_code == 200, response.text
        assert "armada_" in response.text


def test_the_default_is_decided_by_the_bind_address() -> None:
    assert Settings().auth.public_metrics is None
    env = load_settings(env={"ARMADA_AUTH_PUBLIC_METRICS": "true"})
    assert env.auth.public_metrics is True


def test_name_parameters_select_the_series(tmp_path: Path) -> None:
    """``?name[]=`` (repeatable, as Prometheus federation asks) answers only those series."""
    with server_on(tmp_path, "127.0.0.1") as server:
        wanted = [
            "armada_eventstore_append_lock_busy_seconds_total",
            "armada_executor_last_heartbeat_timestamp_seconds",
        ]
        response = httpx.get(f"{server.url}/metrics", params={"name[]": wanted}, timeout=30)
        assert response.status_code == 200, response.text
        series = {
            line.split("{")[0].split()[0] for line in response.text.splitlines() if not line.startswith("#")
        }
        assert series == {wanted[0]}  # no executor has called in: the other has no series
        assert "armada_eventstore_append_groups_total" in scrape(server).text
