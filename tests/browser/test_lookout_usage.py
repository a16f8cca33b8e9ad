"""Lookout's Usage page in a real browser: its charts draw the numbers ``GET /v1/usage``
returns, their data downloads as CSV, and the Content-Security-Policy refuses nothing
(the ``page`` fixture fails the test on any refusal or script error)."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from armada.client import ArmadaClient
from tests.browser.jobs import shell_job
from tests.processes import Server


def usage(server: Server, **params: str) -> dict:  # type: ignore[type-arg]
    answer = httpx.get(f"{server.url}/v1/usage", params=params, timeout=30)
    answer.raise_for_status()
    return answer.json()  # type: ignore[no-any-return]


def shown(value: float) -> str:
    """A figure as the chart's table writes it: six significant digits, as JavaScript prints numbers."""
    text = str(float(f"{value:.6g}"))
    return text.removesuffix(".0")


def test_usage_charts_draw_the_api_figures_and_download_them(
    page: Page, server: Server, queue: str, client: ArmadaClient
) -> None:
    [job_id] = client.submit_jobs(queue, "usage", [shell_job("sleep 2", cpu="250m")])
    page.goto(f"/jobs?queue={queue}")
    expect(page.locator(f'tr[data-job-id="{job_id}"] .badge')).to_have_text("SUCCEEDED")
    today = datetime.now(UTC).date().isoformat()

    page.goto(f"/usage?queue={queue}&since={today}&until={today}")
    chart = page.locator('figure[data-chart="usage"]')
    expect(chart.locator("canvas").first).to_be_visible()
    [row] = [
        r
        for r in usage(server, since=today, until=today, by="day,queue")["rows"]
        if r["key"]["queue"] == queue
    ]
    core_hours = row["used"]["cpu"] / 3600
    assert row["used"]["cpu"] >= 0.25 * 2  # 250m for at least the two seconds it slept
    table = chart.locator("table.chart-table")
    expect(table.locator("thead th")).to_have_text(["day", queue])
    cells = table.locator("tbody tr td")
    expect(cells).to_have_text([today, shown(core_hours)])
    drawn = chart.locator("canvas").first.evaluate(
        "c => c.getContext('2d').getImageData(0, 0, c.width, c.height).data"
        ".some((v, i) => i % 4 === 3 && v > 0)"
    )
    assert drawn, "the chart's canvas is blank"

    waits = page.locator('figure[data-chart="waits"] table.chart-table tbody td')
    expect(waits).to_have_text([today, *(shown(row["waits"][name]) for name in ("p50", "p90", "p99"))])
    expect(page.locator('figure[data-chart="counts"]')).to_be_visible()
    expect(page.locator('figure[data-chart^="share-"]')).to_have_count(1)

    with page.expect_download() as download:
        chart.get_by_role("link", name="Download CSV").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert list(csv.reader(io.StringIO(text))) == [["day", queue], [today, shown(core_hours)]]


def test_the_range_picker_moves_the_period(page: Page) -> None:
    page.goto("/usage?since=2026-01-01&until=2026-01-03")
    expect(page.locator('figure[data-chart="counts"] table.chart-table tbody tr')).to_have_count(3)
    page.locator('input[name="until"]').fill("2026-01-07")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"until=2026-01-07"))
    expect(page.locator('figure[data-chart="counts"] table.chart-table tbody tr')).to_have_count(7)
