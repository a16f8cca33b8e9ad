"""Saved views and the drawer's templates in a real browser: save the page's filters and
columns as a view, find it again on a fresh page, and see the configured link and command
(copied to the clipboard) in a job's drawer. ``ARMADA_TEST_SCREENSHOTS=docs/img`` also
saves ``lookout-saved-view.png`` and ``lookout-drawer-templates.png``."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from playwright.sync_api import Page, expect

from armada.client import ArmadaClient
from tests.browser.jobs import shell_job


def headers(page: Page) -> list[str]:
    return [text.strip() for text in page.locator("table.jobs thead th").all_inner_texts()][1:]


def screenshot(page: Page, name: str) -> None:
    if directory := os.environ.get("ARMADA_TEST_SCREENSHOTS"):
        page.screenshot(path=str(Path(directory) / name))


def test_a_saved_view_comes_back_and_the_drawer_shows_templates(
    page: Page, queue: str, client: ArmadaClient
) -> None:
    (job_id,) = client.submit_jobs(queue, "set", [shell_job("sleep 120")])
    page.goto(f"/jobs?queue={queue}&sort=priority")
    row = page.locator(f'tr[data-job-id="{job_id}"]')
    expect(row).to_be_visible()
    columns = page.locator("details.columns-menu")
    columns.locator("summary").click()
    columns.locator('li[data-column="priority"] input[type=checkbox]').uncheck()
    columns.locator("summary").click()
    assert "Priority" not in headers(page)

    name = f"Mine {uuid.uuid4().hex[:6]}"
    views = page.locator("details.views-menu")
    views.locator("summary").click()
    views.get_by_role("textbox", name="View name").fill(name)
    views.get_by_role("button", name="Save view").click()
    expect(views.locator(f'li[data-view="{name}"]')).to_be_visible()

    # Somewhere else, with the columns reset: opening the view brings both back.
    page.goto("/jobs")
    columns.locator("summary").click()
    columns.get_by_role("button", name="Reset columns").click()
    columns.locator("summary").click()
    expect(page.locator("table.jobs thead th", has_text="Priority")).to_have_count(1)
    views.locator("summary").click()
    views.locator(f'li[data-view="{name}"] a').click()
    expect(page).to_have_url(f"{page.url.split('/jobs')[0]}/jobs?queue={queue}&sort=priority")
    expect(row).to_be_visible()
    assert "Priority" not in headers(page)
    views.locator("summary").click()
    expect(views.locator(f'li[data-view="{name}"]')).to_be_visible()
    screenshot(page, "lookout-saved-view.png")
    views.locator("summary").click()

    # The drawer: a link made of an https URL, and a command naming the run's cluster.
    row.locator("a.job-link").click()
    templates = page.locator("section.job-templates")
    expect(templates.get_by_role("link", name="Dashboard")).to_have_attribute(
        "href", f"https://grafana.example/d/jobs?var-job={job_id}"
    )
    command = templates.locator('div.job-command[data-command="Logs"] pre.command')
    expect(command).to_contain_text(f"logs armada-{job_id.lower()}-0")  # once the job has run
    assert command.inner_text().startswith("kubectl --context ")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    templates.get_by_role("button", name="Copy Logs").click()
    expect(page.get_by_text("Command copied.")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == command.inner_text()
    screenshot(page, "lookout-drawer-templates.png")
    client.cancel_jobs(queue, "set", [job_id])  # free the node for the other tests
