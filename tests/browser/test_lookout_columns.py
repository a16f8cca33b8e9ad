"""The jobs table's columns in a real browser: hide, reorder, add an annotation column,
and find the choice again after a reload. ``ARMADA_TEST_SCREENSHOTS=docs/img`` also saves
the open menu (``lookout-columns.png``)."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Page, expect

from armada.client import ArmadaClient
from tests.browser.jobs import shell_job


def headers(page: Page) -> list[str]:
    return [text.strip() for text in page.locator("table.jobs thead th").all_inner_texts()][1:]


def test_columns_are_chosen_ordered_and_kept(page: Page, queue: str, client: ArmadaClient) -> None:
    job = shell_job("sleep 120")
    job.annotations = {"team": "vision"}
    (job_id,) = client.submit_jobs(queue, "set", [job])
    page.goto(f"/jobs?queue={queue}")
    expect(page.locator(f'tr[data-job-id="{job_id}"]')).to_be_visible()
    assert headers(page)[:5] == ["Job id", "Queue", "Job set", "State", "Priority"]
    menu = page.locator("details.columns-menu")
    menu.locator("summary").click()
    menu.locator('li[data-column="priority"] input[type=checkbox]').uncheck()
    menu.get_by_role("button", name="Move State up").click()
    menu.get_by_role("textbox", name="Annotation key").fill("team")
    menu.get_by_role("button", name="Add column").click()
    expected = ["Job id", "Queue", "State", "Job set", "Class"]
    expect(page.locator("table.jobs thead th").nth(3)).to_have_text("State")
    assert headers(page)[:5] == expected and headers(page)[-1] == "team" and "Priority" not in headers(page)
    expect(page.locator(f'tr[data-job-id="{job_id}"] td').last).to_have_text("vision")
    if directory := os.environ.get("ARMADA_TEST_SCREENSHOTS"):
        page.screenshot(path=str(Path(directory) / "lookout-columns.png"))

    page.reload()  # the choice is this browser's, kept across visits
    expect(page.locator(f'tr[data-job-id="{job_id}"] td').last).to_have_text("vision")
    assert headers(page)[:5] == expected
    menu.locator("summary").click()
    menu.get_by_role("button", name="Reset columns").click()
    expect(page.locator("table.jobs thead th").nth(5)).to_have_text("Priority")
    assert "team" not in headers(page)
    client.cancel_jobs(queue, "set", [job_id])  # free the node for the other tests
