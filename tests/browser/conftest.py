"""Browser tests: Debian's Chromium driven by Playwright against a real ``armada serve --dev``.

Nothing downloads a browser: Playwright launches the system Chromium (``.ci/run`` installs
it with apt-get). Without it, or without the playwright package, these tests are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import Serve, Server

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("ARMADA_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Upper bound for auto-waiting assertions: jobs really run, on 2 shared cores.
EXPECT_TIMEOUT_MS = 45_000


@pytest.fixture(scope="module")
def database_kind() -> str:
    """On SQLite only: what these tests check is the page, which the store does not change."""
    return "sqlite"


@pytest.fixture(scope="module")
def serve() -> Serve:
    return Serve(
        args=("--dev",),
        env={
            # The retry engine (only queues naming a policy use it) and exit 42 named transient.
            "ARMADA_SCHEDULING_RETRY_POLICY": json.dumps({"enabled": True, "globalMaxRetries": 5}),
            # The job drawer's templates (test_lookout_saved_views.py).
            "ARMADA_LOOKOUT": json.dumps(
                {
                    "commands": [
                        {
                            "name": "Logs",
                            "description": "The job's container output, from its cluster.",
                            "template": (
                                "kubectl --context {{ cluster }} -n {{ namespace }} logs {{ podName }}"
                            ),
                        }
                    ],
                    "links": [
                        {
                            "name": "Dashboard",
                            "template": "https://grafana.example/d/jobs?var-job={{ jobId }}",
                        }
                    ],
                }
            ),
            "ARMADA_EXECUTOR_ERROR_CATEGORIES": json.dumps(
                {
                    "categories": [
                        {"name": "transient", "rules": [{"onExitCodes": {"operator": "In", "values": [42]}}]}
                    ]
                }
            ),
        },
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    if not Path(CHROMIUM).exists() and not shutil.which(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    sync_api.expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: sync_api.Browser, server: Server) -> Iterator[sync_api.Page]:
    """A fresh tab on a laptop-sized screen; closed (ending its live stream) after the test.

    Anything the server's Content-Security-Policy refused (an inline style, a script) fails
    the test: Chromium reports it on the console, and the UI would silently lose it.
    """
    context = browser.new_context(base_url=server.url, viewport={"width": 1366, "height": 768})
    errors: list[str] = []
    refused: list[str] = []
    tab = context.new_page()
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    yield tab
    context.close()
    assert errors == [], f"JavaScript errors: {errors}"
    assert refused == [], f"refused by the Content-Security-Policy: {refused}"
