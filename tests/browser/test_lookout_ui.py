"""Lookout in a real browser, with real jobs run by the dev server's local executor."""

from __future__ import annotations

import re
import sys
from typing import Any

import httpx
import msgspec
from playwright.sync_api import Page, expect

from armada.client import ArmadaClient
from armada.model.ingress import ServiceConfig
from armada.model.queues import Queue
from armada.model.retry import RetryPolicy, RetryRule
from tests.browser.jobs import shell_job
from tests.processes import Server, free_port


def row(page: Page, job_id: str) -> Any:
    return page.locator(f'tr[data-job-id="{job_id}"]')


def test_queues_page_shows_queues_and_the_executor(page: Page, queue: str, client: ArmadaClient) -> None:
    job_ids = client.submit_jobs(queue, "set", [shell_job("sleep 120")])
    page.goto("/")
    queue_row = page.locator(f'tr[data-queue="{queue}"]')
    expect(queue_row.get_by_role("link", name=queue)).to_be_visible()
    expect(queue_row.locator(".share")).to_have_count(1)  # fair vs actual share once scheduled
    expect(page.locator("table.executors")).to_contain_text("local")
    queue_row.get_by_role("link", name=queue).click()
    expect(page).to_have_url(re.compile(rf"/jobs\?queue={queue}$"))
    expect(page.locator("table.jobs tbody tr")).to_have_count(1)
    client.cancel_jobs(queue, "set", job_ids)  # free the node for the other tests


def test_a_job_goes_live_from_queued_to_succeeded_with_its_events(
    page: Page, queue: str, client: ArmadaClient
) -> None:
    page.goto(f"/jobs?queue={queue}")
    expect(page.get_by_text("No jobs match these filters.")).to_be_visible()
    expect(page.locator("#live")).to_have_text("live")

    [done] = client.submit_jobs(queue, "first", [shell_job("echo hello; sleep 1")])
    [failing] = client.submit_jobs(queue, "second", [shell_job("echo oops; exit 3")])
    # No reload: the page follows the server's change stream.
    expect(row(page, done).locator(".badge")).to_have_text("SUCCEEDED")
    expect(row(page, failing).locator(".badge")).to_have_text("FAILED")

    page.get_by_role("checkbox", name="FAILED").check()
    expect(page).to_have_url(re.compile(r"state=FAILED"))
    expect(page.locator("table.jobs tbody tr")).to_have_count(1)
    expect(row(page, failing)).to_be_visible()

    row(page, failing).get_by_role("link", name=failing).click()
    drawer = page.locator("#drawer")
    expect(drawer.locator(".failure")).to_contain_text("exit code 3")
    expect(drawer.locator("pre.log")).to_contain_text("oops")
    events = drawer.locator("ol.timeline li")
    expect(events.first).to_contain_text("submitted")
    expect(events.last).to_contain_text("failed")
    expect(drawer.locator("ol.timeline li[data-type=running]")).to_have_count(1)

    page.reload()  # the drawer is part of the shareable link
    expect(page.locator("#drawer h2")).to_contain_text(failing)


def test_cancel_from_the_ui_and_see_why_a_job_is_pending(
    page: Page, server: Server, queue: str, client: ArmadaClient
) -> None:
    overview = httpx.get(f"{server.url}/api/v1/overview").json()
    capacity = sum(executor["capacity"]["cpuMillis"] for executor in overview["executors"])
    # The blocker takes every cpu of the dev executor's one node, so the waiter must wait.
    [blocker] = client.submit_jobs(queue, "blocker", [shell_job("sleep 300", cpu=f"{capacity}m")])
    page.goto(f"/jobs?queue={queue}")
    expect(row(page, blocker).locator(".badge")).to_have_text("RUNNING")
    [waiter] = client.submit_jobs(queue, "waiter", [shell_job("sleep 1")])

    row(page, waiter).get_by_role("link", name=waiter).click()
    drawer = page.locator("#drawer")
    expect(drawer.locator("h2 .badge")).to_have_text("QUEUED")
    pending = drawer.locator("section.pending")
    expect(pending).to_contain_text("Place in queue")  # the scheduler's report on the job
    expect(pending.locator(".reason")).not_to_be_empty()
    drawer.get_by_role("button", name="Close").click()

    page.get_by_role("checkbox", name="Select all on this page").check()
    page.get_by_role("button", name="Cancel", exact=True).click()
    page.get_by_role("textbox", name="Reason").fill("not needed")
    page.get_by_role("button", name="Confirm cancel").click()
    expect(page.locator(".toast")).to_contain_text("Cancelling 2 jobs")
    expect(row(page, waiter).locator(".badge")).to_have_text("CANCELLED")
    expect(row(page, blocker).locator(".badge")).to_have_text("CANCELLED")
    assert client.job_status([blocker, waiter]) == {blocker: "CANCELLED", waiter: "CANCELLED"}


def test_the_drawer_links_a_running_jobs_exposed_port(page: Page, queue: str, client: ArmadaClient) -> None:
    port = free_port()
    job = shell_job(f"exec {sys.executable} -m http.server {port} --bind 127.0.0.1")
    assert job.pod_spec is not None
    job.pod_spec["containers"][0]["ports"] = [{"containerPort": port}]
    [job_id] = client.submit_jobs(
        queue, "web", [msgspec.structs.replace(job, services=[ServiceConfig(ports=[port])])]
    )
    page.goto(f"/jobs?queue={queue}&job={job_id}")
    link = page.locator("#drawer table.runs ul.addresses a")
    expect(link).to_have_text(f"127.0.0.1:{port}")
    expect(link).to_have_attribute("href", f"http://127.0.0.1:{port}/")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    client.cancel_jobs(queue, "web", [job_id])


def test_the_logs_tab_follows_a_running_job_and_keeps_its_lines(
    page: Page, queue: str, client: ArmadaClient
) -> None:
    ticks = "for i in 1 2 3 4 5 6 7 8; do echo tick-$i; sleep 1; done"
    [job_id] = client.submit_jobs(queue, "logs", [shell_job(ticks)])
    page.goto(f"/jobs?queue={queue}&job={job_id}")
    drawer = page.locator("#drawer")
    expect(drawer.locator("h2 .badge")).to_have_text("RUNNING")
    drawer.get_by_role("tab", name="Logs").click()
    log = drawer.locator("pre.log-lines")
    expect(log).to_contain_text("tick-1")
    assert "tick-8" not in log.inner_text()  # read while it runs, not only at the end
    expect(drawer.locator("h2 .badge")).to_have_text("SUCCEEDED")
    expect(log).to_have_text("".join(f"tick-{i}\n" for i in range(1, 9)))
    drawer.get_by_role("tab", name="Details").click()
    expect(drawer.locator("pre.log-lines")).to_be_hidden()
    expect(drawer.locator("ol.timeline li[data-type=succeeded]")).to_have_count(1)


def test_the_logs_tab_of_a_failed_job_and_its_failure_tail(
    page: Page, queue: str, client: ArmadaClient
) -> None:
    [job_id] = client.submit_jobs(queue, "logs", [shell_job("echo first; echo broken >&2; exit 4")])
    page.goto(f"/jobs?queue={queue}&job={job_id}")
    drawer = page.locator("#drawer")
    expect(drawer.locator("h2 .badge")).to_have_text("FAILED")
    expect(drawer.locator(".failure pre.log")).to_contain_text("broken")  # Details: the failure tail
    drawer.get_by_role("tab", name="Logs").click()
    expect(drawer.locator("pre.log-lines")).to_have_text("first\nbroken\n")


def test_executors_page_cordons_and_cancels_with_confirmation(
    page: Page, queue: str, client: ArmadaClient
) -> None:
    [executor] = client.list_executors()
    [node] = executor.nodes
    [job_id] = client.submit_jobs(queue, "held", [shell_job("sleep 300")])
    page.goto("/executors")
    executor_row = page.locator(f'tr.executor[data-executor="{executor.name}"]')
    node_row = page.locator(f'tr.node[data-node="{node.name}"]')
    expect(node_row.locator("td.num")).to_have_text("1")  # the job runs there

    executor_row.get_by_role("button", name="Cordon", exact=True).click()
    executor_row.get_by_role("textbox", name="Reason").fill("kernel upgrade")
    executor_row.get_by_role("button", name="Confirm cordon").click()
    expect(page.locator(".toast").last).to_contain_text(f"Cordoned executor {executor.name}")
    expect(executor_row.locator(".badge.cordoned")).to_be_visible()
    expect(executor_row).to_contain_text("kernel upgrade")
    assert client.list_executors()[0].cordon_reason == "kernel upgrade"

    node_row.get_by_role("button", name="Cordon", exact=True).click()
    node_row.get_by_role("button", name="Confirm cordon").click()
    expect(node_row.locator(".badge.cordoned")).to_be_visible()
    assert client.list_executors()[0].nodes[0].cordoned

    node_row.get_by_role("button", name="Cancel", exact=True).click()
    node_row.get_by_role("button", name="Back").click()  # a second thought: nothing happens
    assert client.job_status([job_id])[job_id] in ("LEASED", "PENDING", "RUNNING")
    node_row.get_by_role("button", name="Cancel", exact=True).click()
    node_row.get_by_role("button", name="Confirm cancel").click()
    expect(page.locator(".toast").last).to_contain_text(f"Cancelling 1 job on node {node.name}")
    expect(node_row.locator("td.num")).to_have_text("0")
    assert client.job_status([job_id]) == {job_id: "CANCELLED"}

    for row_locator in (node_row, executor_row):
        row_locator.get_by_role("button", name="Uncordon").click()
        row_locator.get_by_role("button", name="Confirm uncordon").click()
        expect(row_locator.locator(".badge.cordoned")).to_have_count(0)
    [after] = client.list_executors()
    assert not after.cordoned and not after.nodes[0].cordoned


def test_the_drawer_shows_a_retried_jobs_attempts_and_decisions(
    page: Page, queue: str, client: ArmadaClient
) -> None:
    """Exit 42 is ``transient``; the queue's policy retries it once, then its limit fails it."""
    policy = RetryPolicy(
        name=f"{queue}-once", retry_limit=1, rules=[RetryRule(action="Retry", on_category="transient")]
    )
    client.create_retry_policy(policy)
    client.update_queue(Queue(name=queue, retry_policies=[policy.name]))
    [job_id] = client.submit_jobs(queue, "retries", [shell_job("exit 42")])
    page.goto(f"/jobs?queue={queue}&job={job_id}")
    drawer = page.locator("#drawer")
    expect(drawer.locator("h2 .badge")).to_have_text("FAILED")
    section = drawer.locator("section.retries")
    expect(section.locator("h3")).to_have_text("Retries")
    expect(section).to_contain_text(f"1 retry granted by retry policy {policy.name}")
    attempts = section.locator("tbody tr")
    expect(attempts).to_have_count(2)
    first, second = attempts.nth(0).locator("td"), attempts.nth(1).locator("td")
    expect(first.nth(2)).to_have_text("failed")
    expect(first.nth(3)).to_have_text("transient")
    expect(first.nth(4)).to_have_text(f"Retry by {policy.name} rule 0")
    expect(first.nth(7)).to_contain_text("retry 1 of 1")
    expect(second.nth(4)).to_have_text(f"Fail by {policy.name} rule 0")
    expect(second.nth(7)).to_contain_text("retryLimit 1 reached")
