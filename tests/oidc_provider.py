"""A real OpenID Connect provider for sign-in tests (``oidc-provider-mock``, in a thread),
the fixtures the sign-in tests share (a plugin of ``tests/conftest.py``), and a browser-less
walk through Lookout's sign-in.

Its users sign in by name on its authorization page (no password); the ``groups`` claim
of ``alice`` is ``team-a`` and ``bob``'s ``team-b`` (``examples/config/auth-basic.yaml``'s
teams). Its issuer is ``http://localhost:PORT``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import msgspec
import pytest

from armada.auth.settings import LookoutSignIn, OidcSettings
from armada.client import ArmadaClient
from armada.client.config import ClientConfig
from armada.model.queues import Queue
from armada.settings import Settings
from tests.api.accounts import example_settings
from tests.api.jobs import item
from tests.processes import Served

LOOKOUT_CLIENT = "lookout"
USERS = {"alice": ["team-a"], "bob": ["team-b"]}


@contextmanager
def oidc_provider() -> Iterator[str]:
    """A running provider's issuer URL."""
    from oidc_provider_mock import User, run_server_in_thread  # noqa: PLC0415 (a dev dependency)

    users = [User(sub=name, claims={"groups": groups}) for name, groups in USERS.items()]
    with run_server_in_thread(user_claims=users) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    """A provider for the module, by its issuer URL."""
    with oidc_provider() as url:
        yield url


def signing_in(issuer: str) -> Settings:
    """The example users' settings with sign-in from ``issuer``, whose tokens (an hour long, the
    provider's default) a margin of two hours refreshes on every request."""
    return with_sign_in(example_settings(), issuer, refresh_margin_seconds=7200)


class Teams(msgspec.Struct, frozen=True):
    queue_a: str
    queue_b: str
    job_a: str
    job_b: str


@pytest.fixture(scope="module")
def teams(server: Served) -> Teams:
    """A queue of each team (owned by its group) with one job each, made by the example admin."""
    a, b = f"team-a-{uuid.uuid4().hex[:6]}", f"team-b-{uuid.uuid4().hex[:6]}"
    config = ClientConfig(armada_url=server.url, username="admin", password="admin-pass")
    with ArmadaClient(config) as admin:
        admin.create_queue(Queue(name=a, group_owners=["team-a"]))
        admin.create_queue(Queue(name=b, group_owners=["team-b"]))
        (job_a,) = admin.submit_jobs(a, "set", [item()])
        (job_b,) = admin.submit_jobs(b, "set", [item()])
    return Teams(a, b, job_a, job_b)


def with_sign_in(settings: Settings, issuer: str, *, refresh_margin_seconds: float = 60.0) -> Settings:
    """``settings`` with bearer tokens and Lookout's sign-in from ``issuer``."""
    oidc = OidcSettings(issuer=issuer, audience="armada", jwks_url=f"{issuer}/jwks")
    sign_in = LookoutSignIn(
        client_id=LOOKOUT_CLIENT,
        client_secret="lookout-secret",
        refresh_margin_seconds=refresh_margin_seconds,
    )
    auth = msgspec.structs.replace(settings.auth, oidc=oidc, lookout_sign_in=sign_in)
    return msgspec.structs.replace(settings, auth=auth)


@contextmanager
def sign_in(server_url: str, user: str, next_path: str = "/jobs") -> Iterator[httpx.Client]:
    """A client holding ``user``'s Lookout session cookie, signed in as a browser would be."""
    with httpx.Client(base_url=server_url, timeout=30) as browser:
        started = browser.get("/auth/login", params={"next": next_path})
        assert started.status_code == 303, started.text
        authorized = httpx.post(started.headers["location"], data={"sub": user}, timeout=30)
        assert authorized.status_code == 302, authorized.text
        landed = browser.get(authorized.headers["location"])
        assert (landed.status_code, landed.headers["location"]) == (303, next_path), landed.text
        yield browser


def revoke_tokens(issuer: str, user: str) -> None:
    """The provider forgets every token of ``user``: their refresh fails from now on."""
    httpx.post(f"{issuer}/users/{user}/revoke-tokens", timeout=30).raise_for_status()
