"""What a server refuses to start with, by bind address (armada.auth.bind_address)."""

from __future__ import annotations

import pytest

from armada.auth.bind_address import is_loopback, startup_refusals
from armada.auth.published import PUBLISHED_HASHES
from armada.auth.secrets import hash_password, hash_token
from armada.auth.settings import AuthSettings, BasicUser, OidcSettings, StaticToken


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("10.1.2.3", False),
        ("armada.example.com", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_anonymous_needs_loopback_or_an_explicit_setting() -> None:
    assert startup_refusals(AuthSettings(), "127.0.0.1") == []
    (refusal,) = startup_refusals(AuthSettings(), "0.0.0.0")
    assert "allowAnonymousOnNetwork" in refusal
    assert startup_refusals(AuthSettings(allow_anonymous_on_network=True), "0.0.0.0") == []


def test_published_hashes_are_refused_off_loopback_only() -> None:
    published = sorted(PUBLISHED_HASHES)
    scrypt = next(h for h in published if h.startswith("scrypt:"))
    sha = next(h for h in published if h.startswith("sha256:"))
    auth = AuthSettings(
        anonymous=False,
        basic_users={
            "a": BasicUser(password_hash=scrypt),
            "b": BasicUser(password_hash=hash_password("x", log2_n=4)),
        },
        tokens=[StaticToken(user="t", token_hash=hash_token("mine")), StaticToken(user="e", token_hash=sha)],
    )
    assert startup_refusals(auth, "127.0.0.1") == []
    refusals = startup_refusals(auth, "0.0.0.0")
    assert [r.split(" is ")[0] for r in refusals] == [
        "auth.basicUsers.a.passwordHash",
        "auth.tokens[1].tokenHash",
    ]


def test_oidc_algorithm_misconfiguration_is_refused_on_every_address() -> None:
    oidc = OidcSettings(issuer="i", audience="a", jwks_file="/dev/null", algorithms=["RS256", "HS256", "XX1"])
    refusals = startup_refusals(AuthSettings(oidc=oidc), "127.0.0.1")
    assert len(refusals) == 2 and "symmetric" in refusals[0] and "XX1" in refusals[1]
