"""OIDC bearer tokens, verified against a JWKS served over real HTTP by this test."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from armada.auth.authentication import Authentication
from armada.auth.identity import EVERYONE
from armada.auth.secrets import hash_password
from armada.auth.settings import AuthSettings, BasicUser, OidcSettings
from armada.model.errors import Unauthenticated
from tests.auth_keys import AUDIENCE, ISSUER, SigningKey


class JwksServer:
    """Serves whichever keys are current at ``url``; counts fetches."""

    def __init__(self, *keys: SigningKey) -> None:
        self.keys = list(keys)
        self.fetches = 0
        self.closed = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.fetches += 1
                body = json.dumps({"keys": [k for key in outer.keys for k in key.jwks()["keys"]]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/certs"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def key() -> SigningKey:
    return SigningKey("k1")


@pytest.fixture
def jwks(key: SigningKey) -> Iterator[JwksServer]:
    server = JwksServer(key)
    yield server
    server.close()


def authentication(
    jwks: JwksServer, *, users: dict[str, BasicUser] | None = None, **oidc: Any
) -> Authentication:
    settings = OidcSettings(issuer=ISSUER, audience=AUDIENCE, jwks_url=jwks.url, **oidc)
    return Authentication(AuthSettings(anonymous=False, oidc=settings, basic_users=users or {}))


async def test_valid_token_gives_user_and_groups(jwks: JwksServer, key: SigningKey) -> None:
    identity = await authentication(jwks).identify(f"Bearer {key.token('carol', ['team-a', 'gpu'])}")
    assert identity.name == "oidc:carol"  # token users have their own namespace
    assert identity.groups == {"team-a", "gpu", EVERYONE}


async def test_keys_are_cached_and_refetched_for_a_new_key_id(jwks: JwksServer, key: SigningKey) -> None:
    auth = authentication(jwks, jwks_refetch_cooldown_seconds=0)
    for _ in range(3):
        await auth.identify(f"Bearer {key.token('carol')}")
    assert jwks.fetches == 1
    rotated = SigningKey("k2")
    jwks.keys.append(rotated)
    assert (await auth.identify(f"Bearer {rotated.token('dave')}")).name == "oidc:dave"
    assert jwks.fetches == 2
    # Within the cooldown an unknown key id does not refetch (made-up ids cannot hammer the provider).
    cooled = authentication(jwks, jwks_refetch_cooldown_seconds=60)
    await cooled.identify(f"Bearer {key.token('carol')}")
    with pytest.raises(Unauthenticated):
        await cooled.identify(f"Bearer {SigningKey('k3').token('mallory')}")
    assert jwks.fetches == 3


async def test_configurable_claims(jwks: JwksServer, key: SigningKey) -> None:
    auth = authentication(jwks, username_claim="preferred_username", groups_claim="realm_access.roles")
    token = key.token("0f3c-uuid", preferred_username="erin", realm_access={"roles": ["team-b"]}, groups=None)
    identity = await auth.identify(f"Bearer {token}")
    assert (identity.name, identity.groups) == ("oidc:erin", {"team-b", EVERYONE})
    spaced = authentication(jwks, groups_claim="scope")
    identity = await spaced.identify(f"Bearer {key.token('erin', scope='read write')}")
    assert identity.groups == {"read", "write", EVERYONE}


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": 1_000_000, "iat": 999_000},  # expired long ago
        {"aud": "someone-else"},
        {"iss": "https://evil.test"},
        {"exp": None},  # no expiry
        {"nbf": 4_000_000_000},  # not yet valid
        {"sub": None},  # no user name
    ],
    ids=["expired", "audience", "issuer", "no-exp", "not-yet-valid", "no-subject"],
)
async def test_bad_tokens_are_refused_without_saying_why(
    jwks: JwksServer, key: SigningKey, claims: dict[str, Any]
) -> None:
    with pytest.raises(Unauthenticated) as refused:
        await authentication(jwks).identify(f"Bearer {key.token('carol', **claims)}")
    assert (refused.value.detail, refused.value.error) == ("invalid token", "invalid_token")


async def test_foreign_signature_and_unsigned_tokens_are_refused(jwks: JwksServer, key: SigningKey) -> None:
    auth = authentication(jwks)
    forged = SigningKey("k1").token("carol")  # same key id, different key
    header, payload, _ = key.token("carol").split(".")
    unsigned = f"{header.replace(header, 'eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0')}.{payload}."
    for token in (forged, unsigned, "a.b.c"):
        with pytest.raises(Unauthenticated):
            await auth.identify(f"Bearer {token}")


async def test_unreachable_jwks_is_an_invalid_token_not_a_crash(key: SigningKey) -> None:
    settings = OidcSettings(issuer=ISSUER, audience=AUDIENCE, jwks_url="http://127.0.0.1:9/none")
    with pytest.raises(Unauthenticated):
        await Authentication(AuthSettings(oidc=settings)).identify(f"Bearer {key.token('carol')}")


async def test_token_identities_cannot_be_local_users_or_anonymous(jwks: JwksServer, key: SigningKey) -> None:
    users = {"admin": BasicUser(password_hash=hash_password("x", log2_n=4), groups=["admins"])}
    prefixed = authentication(jwks, users=users)
    identity = await prefixed.identify(
        f"Bearer {key.token('admin', ['anonymous', 'armada:dev-executor', 'ops'])}"
    )
    assert identity.name == "oidc:admin"
    assert identity.groups == {"ops", EVERYONE}  # reserved groups are dropped
    bare = authentication(jwks, users=users, username_prefix="")
    for name in ("admin", "anonymous"):
        with pytest.raises(Unauthenticated):
            await bare.identify(f"Bearer {key.token(name)}")
    assert (await bare.identify(f"Bearer {key.token('carol')}")).name == "carol"


async def test_cached_keys_keep_working_while_the_issuer_is_down_for_a_bounded_time(
    jwks: JwksServer, key: SigningKey
) -> None:
    auth = authentication(jwks, jwks_cache_seconds=1, jwks_max_stale_seconds=2.5)
    assert (await auth.identify(f"Bearer {key.token('carol')}")).name == "oidc:carol"
    jwks.close()
    await asyncio.sleep(1.2)  # the cache has expired: the refetch fails, the last keys still verify
    assert (await auth.identify(f"Bearer {key.token('carol')}")).name == "oidc:carol"
    await asyncio.sleep(1.5)  # beyond jwksMaxStaleSeconds: no longer trusted
    with pytest.raises(Unauthenticated):
        await auth.identify(f"Bearer {key.token('carol')}")


@pytest.mark.parametrize("algorithms", [["RS257"], ["none"], ["HS256"], []])
def test_an_algorithm_misconfiguration_fails_at_start(algorithms: list[str]) -> None:
    settings = OidcSettings(
        issuer=ISSUER, audience=AUDIENCE, jwks_url="http://127.0.0.1:9/x", algorithms=algorithms
    )
    with pytest.raises(ValueError, match="algorithms"):
        Authentication(AuthSettings(oidc=settings))
