"""The ``auth`` settings area: authenticators, credentials (hashed) and global permissions.

The defaults suit development: anonymous callers are accepted and the ``anonymous`` group
holds every global permission but ``execute_jobs`` (an anonymous caller could otherwise
lease other people's jobs and report them done). Anonymous access is refused at start on
any address but loopback unless ``allowAnonymousOnNetwork`` says it is meant
(:mod:`armada.auth.bind_address`). A production configuration turns ``anonymous`` off and
maps permissions to its own groups (see ``examples/config/auth-basic.yaml``).
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from armada.auth.identity import ANONYMOUS, EVERYONE
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
    #: Seconds a JWKS fetched before keeps verifying tokens while the provider cannot be
    #: reached (an outage of the issuer is not an outage of Armada, for this long at most).
    jwks_max_stale_seconds: float = 3600.0
    #: Prefix of user names from tokens, so that a token whose ``sub`` is ``admin`` cannot
    #: act as the local basic user ``admin``. Empty: names are used as they are, and a token
    #: naming a local user or ``anonymous`` is refused.
    username_prefix: str = "oidc:"

    def __post_init__(self) -> None:
        if self.jwks_max_stale_seconds < 0:
            raise ValueError("auth.oidc.jwksMaxStaleSeconds must not be negative")


#: Group that holds ``execute_jobs`` by default: give executors' tokens this group.
EXECUTORS = "executors"


def _development_permissions() -> dict[GlobalPermission, list[str]]:
    """Everything to anonymous callers, except running jobs: that takes an executor's token."""
    return {
        permission: [EXECUTORS] if permission is GlobalPermission.EXECUTE_JOBS else [ANONYMOUS]
        for permission in GlobalPermission
    }


class LookoutSignIn(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Browser sign-in to Lookout with the ``auth.oidc`` issuer (authorization code + PKCE)."""

    #: The client id registered with the issuer for Lookout (the ID token's audience).
    client_id: str
    #: The client's secret, for providers that treat Lookout as a confidential client.
    client_secret: str = ""
    #: Scopes asked for (``openid`` is required; ``offline_access`` where refresh tokens need it).
    scopes: list[str] = msgspec.field(default_factory=lambda: ["openid", "profile", "email"])
    #: The callback URL registered with the issuer; empty: ``/auth/callback`` on the URL the
    #: browser used (set it behind a proxy that rewrites the host or scheme).
    redirect_url: str = ""
    #: Tokens are refreshed when a request finds them this close to expiry.
    refresh_margin_seconds: Annotated[float, Meta(ge=0)] = 60.0
    #: A session ends this long after sign-in, however often it was refreshed.
    session_max_age_seconds: Annotated[float, Meta(gt=0)] = 43200.0
    #: Signed-in browsers one server remembers at most (the oldest session ends first).
    max_sessions: Annotated[int, Meta(ge=1)] = 10000


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
            "groupsClaim, algorithms, leewaySeconds, jwksCacheSeconds, jwksRefetchCooldownSeconds, "
            "jwksMaxStaleSeconds (3600: cached keys used while the provider is down), usernamePrefix "
            "(`oidc:`, so tokens cannot act as local users)}`; algorithms must be asymmetric; null disables."
        ),
    ] = None
    lookout_sign_in: Annotated[
        LookoutSignIn | None,
        Meta(
            description="Sign browsers in to Lookout with the `oidc` issuer: `{clientId, clientSecret, "
            "scopes (openid, profile, email), redirectUrl (default: /auth/callback where the browser "
            "came from), refreshMarginSeconds (60), sessionMaxAgeSeconds (43200), maxSessions (10000)}`; "
            "needs `oidc`. Sessions live in the server's memory, in an HttpOnly cookie; null disables."
        ),
    ] = None
    permission_group_mapping: Annotated[
        dict[GlobalPermission, list[str]],
        Meta(
            description="Groups holding each global permission; permissions not listed are held by nobody. "
            "The default gives `anonymous` all but `execute_jobs`, held by group `executors`; "
            "`execute_jobs` may never go to `anonymous` (nor to `everyone` while anonymous access is on)."
        ),
    ] = msgspec.field(default_factory=_development_permissions)
    public_schema: Annotated[
        bool, Meta(description="Serve the OpenAPI schema (/schema) without credentials.")
    ] = True
    public_metrics: Annotated[
        bool | None,
        Meta(
            description="Serve Prometheus /metrics without credentials (else `view_reports`); unset: "
            "only while the server binds loopback (`server.host`), since its labels name every queue."
        ),
    ] = None
    open_lookout: Annotated[
        bool,
        Meta(
            description="Let every authenticated caller read every queue's jobs in Lookout (`/api/v1/*`), "
            "as upstream's Lookout does; otherwise Lookout shows only queues the caller may `watch`."
        ),
    ] = False
    realm: Annotated[str, Meta(description="Realm named in `WWW-Authenticate` challenges.")] = "armada"
    allow_anonymous_on_network: Annotated[
        bool,
        Meta(
            description="Let `anonymous` access stay on when the server binds an address other than "
            "loopback; without it such a server refuses to start."
        ),
    ] = False
    failed_login_limit: Annotated[
        int,
        Meta(
            ge=1,
            description="Failed logins per client address, and per user name, within "
            "`failedLoginWindowSeconds`; further attempts get 429 with `Retry-After` until the window ends.",
        ),
    ] = 10
    failed_login_window_seconds: Annotated[
        float, Meta(gt=0, description="Seconds over which failed logins are counted.")
    ] = 60.0
    password_hash_concurrency: Annotated[
        int,
        Meta(
            ge=1,
            description="Password checks (scrypt: CPU and 16 MiB each) running at once; "
            "more wait their turn, so a flood of logins cannot take every core.",
        ),
    ] = 2

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
        if self.lookout_sign_in is not None and self.oidc is None:
            raise ValueError("auth.lookoutSignIn: needs auth.oidc (its issuer signs the browser in)")
        executors = set(self.permission_group_mapping.get(GlobalPermission.EXECUTE_JOBS, []))
        if ANONYMOUS in executors or (self.anonymous and EVERYONE in executors):
            raise ValueError(
                "auth.permissionGroupMapping.execute_jobs: anonymous callers may never execute jobs "
                f"(give executors a token in a group such as {EXECUTORS!r})"
            )
