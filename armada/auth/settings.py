"""The ``auth`` settings area: authenticators, credentials (hashed) and global permissions.

The defaults suit development: anonymous callers are accepted and the ``anonymous`` group
holds every global permission. A production configuration turns ``anonymous`` off and
maps permissions to its own groups (see ``examples/config/auth-basic.yaml``).
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from armada.auth.identity import ANONYMOUS
from armada.auth.permissions import GlobalPermission
from armada.auth.secrets import BadHash, check_password_hash, check_token_hash


class BasicUser(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """A user of HTTP basic authentication."""

    #: scrypt hash of the password, from ``armada auth hash-password``.
    password_hash: str
    #: Groups of the user (``everyone`` is implied).
    groups: list[str] = []
    #: Executor ids (clusters) the user may lease and report runs for; ``*`` is every id.
    executors: list[str] = []


class StaticToken(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """A static bearer token, e.g. for an executor or automation."""

    #: User name the token authenticates as.
    user: str
    #: SHA-256 of the token, from ``armada auth hash-token``.
    token_hash: str
    #: Groups of the token's user (``everyone`` is implied).
    groups: list[str] = []
    #: Executor ids (clusters) the token may lease and report runs for; ``*`` is every id.
    #: An executor's token should name its own cluster only.
    executors: list[str] = []


class OidcSettings(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """JWT bearer tokens from an OpenID Connect provider, checked against its keys."""

    #: Required ``iss`` claim.
    issuer: str
    #: Required ``aud`` claim (one of the token's audiences).
    audience: str
    #: URL of the provider's JWKS (fetched, cached, refetched for unknown key ids).
    jwks_url: str = ""
    #: JWKS file, instead of ``jwksUrl``.
    jwks_file: str = ""
    #: Claim holding the user name.
    username_claim: str = "sub"
    #: Claim holding the groups: a list or a space-separated string; dots reach nested claims.
    groups_claim: str = "groups"
    #: Signature algorithms accepted.
    algorithms: list[str] = msgspec.field(default_factory=lambda: ["RS256", "ES256"])
    #: Clock skew tolerated on ``exp``/``nbf``/``iat``, in seconds.
    leeway_seconds: float = 30.0
    #: Seconds a fetched JWKS is cached.
    jwks_cache_seconds: float = 300.0
    #: Least seconds between refetches caused by tokens naming an unknown key id (rotation),
    #: so that made-up key ids cannot hammer the provider.
    jwks_refetch_cooldown_seconds: float = 30.0


def _everything_to_anonymous() -> dict[GlobalPermission, list[str]]:
    return {permission: [ANONYMOUS] for permission in GlobalPermission}


class AuthSettings(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Authentication and authorisation. Authenticators are tried in order (basic users,
    static tokens, OIDC) and the first that accepts the credentials wins; requests with
    bad credentials get 401, never anonymous access."""

    anonymous: Annotated[
        bool,
        Meta(description="Accept requests without credentials as user and group `anonymous` (development)."),
    ] = True
    basic_users: Annotated[
        dict[str, BasicUser],
        Meta(description="HTTP basic users by name: `{passwordHash, groups, executors}`."),
    ] = {}
    tokens: Annotated[
        list[StaticToken],
        Meta(
            description="Static bearer tokens: `{user, tokenHash, groups, executors}`; `executors` lists the "
            "executor ids (clusters) the token may lease and report for (`*`: all)."
        ),
    ] = []
    oidc: Annotated[
        OidcSettings | None,
        Meta(
            description="JWT bearer tokens: `{issuer, audience, jwksUrl or jwksFile, usernameClaim, "
            "groupsClaim, algorithms, leewaySeconds, jwksCacheSeconds, jwksRefetchCooldownSeconds}`; "
            "null disables."
        ),
    ] = None
    permission_group_mapping: Annotated[
        dict[GlobalPermission, list[str]],
        Meta(description="Groups holding each global permission; permissions not listed are held by nobody."),
    ] = msgspec.field(default_factory=_everything_to_anonymous)
    public_schema: Annotated[
        bool, Meta(description="Serve the OpenAPI schema (/schema) without credentials.")
    ] = True
    public_metrics: Annotated[
        bool, Meta(description="Serve Prometheus /metrics without credentials (else `view_reports`).")
    ] = True
    open_lookout: Annotated[
        bool,
        Meta(
            description="Let every authenticated caller read every queue's jobs in Lookout (`/api/v1/*`), "
            "as upstream's Lookout does; otherwise Lookout shows only queues the caller may `watch`."
        ),
    ] = False
    realm: Annotated[str, Meta(description="Realm named in `WWW-Authenticate` challenges.")] = "armada"

    def __post_init__(self) -> None:
        if ANONYMOUS in self.basic_users:
            raise ValueError(f"auth.basicUsers: {ANONYMOUS!r} is reserved for anonymous callers")
        hashes = [
            (f"basicUsers.{name}.passwordHash", check_password_hash, user.password_hash)
            for name, user in self.basic_users.items()
        ] + [(f"tokens[{i}].tokenHash", check_token_hash, t.token_hash) for i, t in enumerate(self.tokens)]
        for where, check, value in hashes:
            try:
                check(value)
            except BadHash as exc:
                raise ValueError(f"auth.{where}: {exc}") from exc
        if self.oidc is not None and bool(self.oidc.jwks_url) == bool(self.oidc.jwks_file):
            raise ValueError("auth.oidc: set exactly one of jwksUrl and jwksFile")
