"""What a server refuses to start with, given the address it binds.

Loopback is development: only this machine can reach it, so anonymous access and the
published example credentials of ``examples/`` are fine there (``armada serve --dev``,
``make run``, the examples' own instructions). Any other address may be reachable by
anyone, so there a server without authentication, or one that accepts a credential this
repository publishes, is refused before it listens (unless anonymous access is explicitly
wanted: ``auth.allowAnonymousOnNetwork``). OIDC settings that could only fail on every
request are refused at start on every address.
"""

from __future__ import annotations

import ipaddress

from jwt.algorithms import get_default_algorithms

from armada.auth.published import PUBLISHED_HASHES
from armada.auth.settings import AuthSettings, OidcSettings


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable from this machine only."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def metrics_public(auth: AuthSettings, host: str) -> bool:
    """Whether ``/metrics`` needs no credentials: ``auth.publicMetrics`` if set, else only on
    loopback (its labels name every queue, which is the watchers' business off this machine)."""
    return is_loopback(host) if auth.public_metrics is None else auth.public_metrics


def startup_refusals(auth: AuthSettings, host: str) -> list[str]:
    """Why a server with these settings must not start on ``host`` (empty: it may)."""
    refusals = oidc_refusals(auth.oidc) if auth.oidc else []
    if is_loopback(host):
        return refusals
    if auth.anonymous and not auth.allow_anonymous_on_network:
        refusals.append(
            f"anonymous access is on and the server binds {host!r}, which is not loopback: "
            "configure credentials and set auth.anonymous false, or set "
            "auth.allowAnonymousOnNetwork true if anyone who can reach it may use it"
        )
    for where in published_credentials(auth):
        refusals.append(
            f"auth.{where} is a credential published in armada's examples/ (anyone knows it): "
            "make your own with `armada auth hash-password` / `armada auth new-token`"
        )
    return refusals


def published_credentials(auth: AuthSettings) -> list[str]:
    """Settings keys whose hash is one of :data:`PUBLISHED_HASHES`."""
    found = [
        f"basicUsers.{name}.passwordHash"
        for name, user in auth.basic_users.items()
        if user.password_hash in PUBLISHED_HASHES
    ]
    return found + [
        f"tokens[{i}].tokenHash"
        for i, token in enumerate(auth.tokens)
        if token.token_hash in PUBLISHED_HASHES
    ]


def oidc_refusals(oidc: OidcSettings) -> list[str]:
    """Algorithms PyJWT does not know, or symmetric ones (a JWKS holds public keys: an
    ``HS256`` token "signed" with one would be forged by anyone who can read the JWKS)."""
    known = get_default_algorithms()
    refusals = []
    if not oidc.algorithms:
        refusals.append("auth.oidc.algorithms is empty: no token could ever verify")
    for algorithm in oidc.algorithms:
        if algorithm not in known or algorithm == "none":
            refusals.append(
                f"auth.oidc.algorithms: {algorithm!r} is not a signature algorithm PyJWT supports"
            )
        elif algorithm.startswith("HS"):
            refusals.append(f"auth.oidc.algorithms: {algorithm!r} is symmetric; a JWKS holds public keys")
    return refusals
