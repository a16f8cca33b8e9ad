"""The jobs table in a real browser: a column resized by its drag handle keeps its width
after a reload, and two levels of grouping (job set, then an annotation) show each group's
count and requests and open into the next level and its jobs. ``ARMADA_TEST_SCREENSHOTS=docs/img``
also saves the open groups (``lookout-grouping.png``)."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from armada.client import ArmadaClient
from tests.browser.jobs import shell_job


def width(locator: Locator) -> float:
    box = locator.bounding_box()
    assert box is not None
    return box["width"]


def annotated(team: str | None) -> object:
    job = shell_job("true")
    job.annotations = {"team": team} if team else {}
    return job


def test_resize_a_column_and_group_two_levels(page: Page, queue: str, client: ArmadaClient) -> None:
    client.submit_jobs(queue, "train", [annotated("vision"), annotated("vision"), annotated(None)])
    client.submit_jobs(queue, "eval", [annotated("speech"), annotated(None)])
    page.goto(f"/jobs?queue={queue}")
    # Settled first: a live refresh redraws the table, and a drag under way with it.
    expect(page.locator('table.jobs tbody tr[data-state="SUCCEEDED"]')).to_have_count(5)

    header = page.locator("table.jobs thead th", has_text="Job set")
    before = width(header)
    handle = header.locator(".resize-handle")
    box = handle.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 90, box["y"] + box["height"] / 2, steps=6)
    page.mouse.up()
    resized = width(header)
    assert abs(resized - (before + 90)) < 3, (before, resized)
    page.reload()  # kept with the column choice, in this browser
    expect(page.locator("table.jobs tbody tr")).to_have_count(5)
    assert abs(width(page.locator("table.jobs thead th", has_text="Job set")) - resized) < 3

    page.locator("select[name=group-add]").select_option("jobSet")
    page.locator("select[name=group-add]").select_option("annotation")
    key = page.get_by_role("textbox", name="Group by annotation key")
    key.fill("team")
    key.press("Enter")
    expect(page).to_have_url(f"/jobs?queue={queue}&groupBy=jobSet&groupBy=annotation%3Ateam")
    outer = page.locator("tr.group-row.depth-0")
    expect(outer).to_have_count(2)
    train = outer.filter(has_text="train")
    expect(train).to_have_attribute("data-count", "3")
    expect(train.locator(".group-stats")).to_contain_text("3 jobs · CPU 0.30 · memory 96Mi")
    train.get_by_role("button").click()
    inner = page.locator("tr.group-row.depth-1")
    expect(inner).to_have_count(2)
    expect(inner.filter(has_text="(none)")).to_have_attribute("data-count", "1")
    vision = inner.filter(has_text="vision")
    expect(vision).to_have_attribute("data-count", "2")
    vision.get_by_role("button").click()
    expect(page.locator("tr.group-job")).to_have_count(2)
    # The grouped table has the same columns, at the width chosen above.
    assert abs(width(page.locator("table.jobs thead th", has_text="Job set")) - resized) < 3
    if directory := os.environ.get("ARMADA_TEST_SCREENSHOTS"):
        page.screenshot(path=str(Path(directory) / "lookout-grouping.png"))
