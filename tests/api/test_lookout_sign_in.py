"""Lookout's single sign-on against a real OIDC provider, over real HTTP, on SQLite and
PostgreSQL: the session cookie, what a signed-in user may read, refresh, expiry, sign-out,
and the CSRF guards for cookie-authenticated requests."""

from __future__ import annotations

import httpx
import pytest

from armada.settings import Settings
from tests.api.accounts import as_user
from tests.oidc_provider import Teams, revoke_tokens, sign_in, signing_in
from tests.servers import ApiServer


@pytest.fixture(scope="module")
def settings(issuer: str) -> Settings:
    return signing_in(issuer)


def listed(browser: httpx.Client) -> set[str]:
    response = browser.post("/api/v1/jobs", json={"take": 500})
    assert response.status_code == 200, response.text
    return {job["jobId"] for job in response.json()["jobs"]}


def test_signed_in_user_and_groups(server: ApiServer) -> None:
    assert httpx.get(f"{server.url}/auth/session").json() == {
        "signIn": True,
        "signedIn": False,
        "name": "",
        "groups": [],
    }
    with sign_in(server.url, "alice") as browser:
        cookie = next(c for c in browser.cookies.jar if c.name == "armada-session")
        assert cookie.has_nonstandard_attr("HttpOnly") and not cookie.secure  # loopback: not Secure
        session = browser.get("/auth/session").json()
        assert (session["signedIn"], session["name"]) == (True, "oidc:alice")
        assert "team-a" in session["groups"]
        assert browser.get("/v1/whoami").json()["name"] == "oidc:alice"


def test_a_user_of_one_group_sees_only_their_queues(server: ApiServer, teams: Teams) -> None:
    with sign_in(server.url, "alice") as alice, sign_in(server.url, "bob") as bob:
        assert teams.job_a in listed(alice) and teams.job_b not in listed(alice)
        assert teams.job_b in listed(bob) and teams.job_a not in listed(bob)
        queues = {queue["name"] for queue in alice.get("/api/v1/overview").json()["queues"]}
        assert teams.queue_a in queues and teams.queue_b not in queues


def test_cookie_requests_from_other_sites_change_nothing(server: ApiServer, teams: Teams) -> None:
    body = {"queue": teams.queue_a, "jobSetId": "set", "jobIds": [teams.job_a]}
    with sign_in(server.url, "alice") as alice:
        foreign = alice.post("/v1/job/cancel", json=body, headers={"Origin": "https://evil.example"})
        assert (foreign.status_code, foreign.json()["field"]) == (403, "Origin")
        cross = alice.post("/v1/job/cancel", json=body, headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        form = alice.post("/v1/job/cancel", content=b"queue=x", headers={"Content-Type": "text/plain"})
        assert form.status_code == 415
        assert listed(alice) >= {teams.job_a}
        with as_user(server, "admin") as admin:
            assert admin.job_status([teams.job_a]) == {teams.job_a: "QUEUED"}
        own = alice.post("/v1/job/cancel", json=body, headers={"Origin": server.url})
        assert own.status_code == 200, own.text
    with as_user(server, "admin") as admin:
        assert admin.job_status([teams.job_a]) == {teams.job_a: "CANCELLED"}


def test_sign_in_state_belongs_to_the_browser_that_started_it(server: ApiServer) -> None:
    with httpx.Client(base_url=server.url) as browser, httpx.Client(base_url=server.url) as victim:
        started = browser.get("/auth/login", params={"next": "//evil.example/x"})
        authorized = httpx.post(started.headers["location"], data={"sub": "alice"})
        stolen = victim.get(authorized.headers["location"])  # no state cookie of this sign-in
        assert (stolen.status_code, stolen.json()["field"]) == (400, "state")
        landed = browser.get(authorized.headers["location"])
        assert (landed.status_code, landed.headers["location"]) == (303, "/")  # never another host
        replayed = browser.get(authorized.headers["location"])  # a code signs in once
        assert replayed.status_code == 400


def test_a_session_the_issuer_no_longer_refreshes_ends(server: ApiServer, issuer: str) -> None:
    with sign_in(server.url, "bob") as bob:
        for _ in range(3):  # every request refreshes (see the server fixture) and stays signed in
            assert bob.get("/v1/whoami").json()["name"] == "oidc:bob"
        revoke_tokens(issuer, "bob")
        ended = bob.post("/api/v1/jobs", json={})
        assert ended.status_code == 401
        assert ended.headers["www-authenticate"] == 'Session realm="lookout"'  # no Basic prompt
        assert bob.get("/auth/session").json()["signedIn"] is False


def test_sign_out_ends_the_session_here_and_at_the_issuer(server: ApiServer, issuer: str) -> None:
    with sign_in(server.url, "alice") as alice:
        session_id = alice.cookies["armada-session"]
        signed_out = alice.post("/auth/logout")
        assert signed_out.status_code == 200
        end_session = signed_out.json()["endSessionUrl"]
        assert end_session.startswith(f"{issuer}/oauth2/end_session?id_token_hint=")
        assert "armada-session" not in alice.cookies
        replayed = httpx.get(f"{server.url}/v1/whoami", cookies={"armada-session": session_id})
        assert replayed.status_code == 401


def test_bearer_and_basic_still_work_beside_sessions(server: ApiServer) -> None:
    with as_user(server, "alice") as alice:
        assert alice.whoami().name == "alice"
    assert httpx.get(f"{server.url}/v1/whoami").status_code == 401
