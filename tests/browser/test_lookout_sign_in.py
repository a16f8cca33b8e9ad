"""Signing in to Lookout in a real browser, with a real OIDC provider started by the test.

The server runs ``examples/config/auth-basic.yaml``'s users plus sign-in from the provider
(:mod:`tests.oidc_provider`), as the API's sign-in tests do; its tokens are refreshed on every
request, so a session whose tokens the provider revoked ends at the next one.
``ARMADA_TEST_SCREENSHOTS=docs/img`` also saves the signed-in jobs page (``lookout-sign-in.png``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec
import pytest
from playwright.sync_api import Page, expect

from tests.oidc_provider import Teams, revoke_tokens, signing_in
from tests.processes import Serve


@pytest.fixture(scope="module")
def serve(issuer: str) -> Serve:
    """(Overrides the dev server of ``conftest.py``: this one signs browsers in.)"""
    return Serve(config={"auth": msgspec.to_builtins(signing_in(issuer).auth)})


def sign_in_as(page: Page, issuer: str, user: str, path: str = "/jobs") -> None:
    page.goto(path)
    expect(page).to_have_url(re.compile(rf"^{re.escape(issuer)}/oauth2/authorize\?"))
    page.get_by_role("button", name=user, exact=True).click()
    expect(page.locator("#user .user-name")).to_have_text(f"oidc:{user}")


def test_a_user_of_one_group_sees_only_their_queues(page: Page, issuer: str, teams: Teams) -> None:
    sign_in_as(page, issuer, "alice")
    expect(page).to_have_url(re.compile(r"/jobs$"))
    expect(page.locator("#user .user-groups")).to_have_text("team-a")
    expect(page.locator(f'tr[data-job-id="{teams.job_a}"]')).to_be_visible()
    expect(page.locator(f'tr[data-job-id="{teams.job_b}"]')).to_have_count(0)
    if directory := os.environ.get("ARMADA_TEST_SCREENSHOTS"):
        page.screenshot(path=str(Path(directory) / "lookout-sign-in.png"))
    page.goto("/")
    expect(page.locator(f'tr[data-queue="{teams.queue_a}"]')).to_be_visible()
    expect(page.locator(f'tr[data-queue="{teams.queue_b}"]')).to_have_count(0)


def test_an_expired_session_signs_in_again(page: Page, issuer: str, teams: Teams) -> None:
    sign_in_as(page, issuer, "bob", f"/jobs?queue={teams.queue_b}")
    expect(page.locator(f'tr[data-job-id="{teams.job_b}"]')).to_be_visible()
    revoke_tokens(issuer, "bob")  # the next refresh fails: the session is over
    page.get_by_role("link", name="Job sets").click()
    expect(page).to_have_url(re.compile(rf"^{re.escape(issuer)}/oauth2/authorize\?"))
    page.get_by_role("button", name="bob", exact=True).click()
    expect(page).to_have_url(re.compile(r"/jobsets$"))  # back where the session ended
    expect(page.locator("#user .user-name")).to_have_text("oidc:bob")


def test_sign_out_ends_the_session_here_and_at_the_provider(page: Page, issuer: str, teams: Teams) -> None:
    sign_in_as(page, issuer, "alice", "/")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(rf"^{re.escape(issuer)}/oauth2/end_session\?id_token_hint="))
    page.get_by_role("button", name="End session").click()
    expect(page.get_by_text("You are signed out.")).to_be_visible()
    expect(page.locator("#user")).to_be_hidden()
    assert page.request.get("/v1/whoami").status == 401
    assert page.request.post("/api/v1/jobs", data={}).status == 401
