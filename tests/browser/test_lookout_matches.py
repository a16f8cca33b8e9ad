"""Column filters on the jobs page in a real browser: added from the filter bar, kept in the
URL (so a reload or a shared link shows the same jobs), removed again."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from armada.client import ArmadaClient
from tests.browser.jobs import shell_job


def test_column_filters_narrow_the_table_and_live_in_the_url(
    page: Page, queue: str, client: ArmadaClient
) -> None:
    (nightly,) = client.submit_jobs(queue, "Nightly-Build", [shell_job("exit 0")])
    (adhoc,) = client.submit_jobs(queue, "adhoc", [shell_job("exit 0")])
    page.goto(f"/jobs?queue={queue}")
    rows = page.locator("table.jobs tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_label("Filter column").select_option("jobSet")
    page.get_by_label("Match").select_option("contains")
    page.get_by_label("Filter value").fill("night")
    page.get_by_role("button", name="Add filter").click()
    expect(rows).to_have_count(1)
    expect(page.locator(f'tr[data-job-id="{nightly}"]')).to_be_visible()
    expect(page).to_have_url(re.compile(r"match=jobSet%3Acontains%3Anight"))
    expect(page.locator(".match-chip")).to_have_text(re.compile("Job set contains night"))

    page.reload()
    expect(rows).to_have_count(1)
    page.get_by_role("button", name="Remove filter 1").click()
    expect(rows).to_have_count(2)
    expect(page.locator(f'tr[data-job-id="{adhoc}"]')).to_be_visible()
