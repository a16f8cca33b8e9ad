"""Enforcing route access policies: the one check every request passes (the app's
``before_request`` hook, run before any dependency or the body is resolved).

It authenticates the caller, stores its :class:`~armada.auth.identity.Identity` in
the scope (where :mod:`armada.api.caller` reads it), then checks the route's declared
policy (:mod:`armada.auth.policy`). Failures are 401 with a ``WWW-Authenticate`` challenge
or 403, both RFC 9457 problems. A route without a policy is refused with 500, and a test
walks the app's routes so that none ships without one.

The decisions themselves are methods of :class:`AccessControl` that take an identity and a
queue name or executor id, not a request, so that other transports (gRPC) make the same
ones.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import structlog
from litestar import Request
from litestar.connection import ASGIConnection
from litestar.exceptions import (
    InternalServerException,
    NotAuthorizedException,
    PermissionDeniedException,
    TooManyRequestsException,
)

from armada.api.guard import refuse_hostile_url, reject_hostile_input
from armada.api.services import services_of
from armada.auth.authentication import Authentication
from armada.auth.identity import Identity
from armada.auth.permissions import VERB_PERMISSION, GlobalPermission, Permissions
from armada.auth.policy import (
    AsExecutor,
    Authenticated,
    OnQueue,
    OwnerOr,
    Policy,
    Public,
    PublicIf,
    Requires,
    Watching,
    policy_of,
)
from armada.auth.queue_changes import owns
from armada.auth.sessions import browser_sessions
from armada.auth.settings import AuthSettings, StaticToken
from armada.auth.throttle import LoginThrottled
from armada.eventstore.store import EventStore
from armada.model.errors import NotFound, PermissionDenied, Unauthenticated
from armada.model.queues import QueueVerb
from armada.services.queues import get_queue
from armada.services.visibility import ReadScope

log = structlog.get_logger(__name__)

#: Scope key of the caller's identity.
IDENTITY = "armada.identity"
#: Cookies holding a Lookout session id: ``__Host-`` (Secure, whole host) except on loopback.
SECURE_SESSION_COOKIE = "__Host-armada-session"
SESSION_COOKIE = "armada-session"
SESSION_SCHEME = "Session"
SESSION_CHALLENGE = 'Session realm="lookout"'


class AccessControl:
    """Authentication and permissions of one server (``Services.access``)."""

    def __init__(
        self,
        settings: AuthSettings,
        *,
        extra_tokens: Iterable[StaticToken] = (),
        extra_grants: Mapping[GlobalPermission, Iterable[str]] | None = None,
    ) -> None:
        self.settings = settings
        self.authentication = Authentication(settings, extra_tokens=extra_tokens)
        self.sessions = browser_sessions(settings, self.authentication.local_names)
        grants = {p: [*settings.permission_group_mapping.get(p, [])] for p in GlobalPermission}
        for permission, groups in (extra_grants or {}).items():
            grants[permission] += groups
        self.permissions = Permissions(grants)

    async def may_on_queue(self, store: EventStore, identity: Identity, name: str, verb: QueueVerb) -> bool:
        """Whether ``identity`` may ``verb`` on queue ``name``. A queue that does not exist is
        allowed: the request then fails as not found, whoever makes it, so the answer says
        nothing about queues the caller may not see."""
        if self.permissions.has(identity, VERB_PERMISSION[verb]):
            return True
        try:
            queue = await get_queue(store, name)
        except NotFound:
            return True
        return self.permissions.may(identity, queue, verb)

    async def owns_queue(self, store: EventStore, identity: Identity, name: str) -> bool:
        """Whether ``identity`` owns queue ``name``; a queue that does not exist is allowed
        (the handler reports it missing)."""
        try:
            return owns(await get_queue(store, name), identity)
        except NotFound:
            return True

    def read_scope(self, store: EventStore, identity: Identity, *, lookout: bool = False) -> ReadScope:
        """The queues ``identity`` may read: those it may ``watch``, or all of them with
        ``watch_all_events`` (or, for Lookout's reads, when ``auth.openLookout`` is on)."""
        everything = self.permissions.has(identity, GlobalPermission.WATCH_ALL_EVENTS) or (
            lookout and self.settings.open_lookout
        )
        return ReadScope(
            store, lambda queue: self.permissions.may(identity, queue, QueueVerb.WATCH), everything=everything
        )

    def may_act_as(self, identity: Identity, executor_id: str) -> bool:
        """Whether ``identity`` may lease and report runs as executor ``executor_id``."""
        return self.permissions.has(identity, GlobalPermission.EXECUTE_JOBS) and identity.may_act_as(
            executor_id
        )


async def enforce_access(request: Request[Any, Any, Any]) -> None:
    """The app's ``before_request`` hook, which Litestar runs before it resolves any
    dependency or the body: refuse a hostile URL, authenticate, apply the route's policy,
    then check the body (:mod:`armada.api.guard`). Not a guard: Litestar copies the route
    handler for every guard it calls, per request (issue 44's pollers)."""
    if await _authenticated(request):
        return
    await reject_hostile_input(request)  # a public route's body, no caller named


async def _authenticated(connection: Request[Any, Any, Any]) -> bool:
    """Whether the caller was authenticated and allowed (then the body was checked too);
    ``False`` for a public route called without credentials."""
    refuse_hostile_url(connection)
    control = services_of(connection.app.state).access
    policy = _effective(policy_of(connection.route_handler.opt), control.settings, connection)
    authorization = connection.headers.get("authorization")
    if isinstance(policy, Public) and not authorization:
        return False
    try:
        identity = await _identify(control, connection, authorization)
    except Unauthenticated as exc:
        # An ended session is not challenged with Basic: a browser would prompt for a password.
        challenge = (
            SESSION_CHALLENGE if exc.scheme == SESSION_SCHEME else control.authentication.challenge(exc)
        )
        raise NotAuthorizedException(detail=exc.detail, headers={"WWW-Authenticate": challenge}) from None
    except LoginThrottled as exc:
        raise TooManyRequestsException(
            detail=str(exc), headers={"Retry-After": str(exc.retry_after)}
        ) from None
    connection.scope[IDENTITY] = identity  # type: ignore[literal-required]
    await reject_hostile_input(connection)  # before the policy reads queue names from it
    if not await _allowed(policy, identity, control, connection):
        raise PermissionDeniedException(detail=f"{identity.name} may not {_what(policy)}")
    return True


async def _identify(
    control: AccessControl, connection: ASGIConnection[Any, Any, Any, Any], authorization: str | None
) -> Identity:
    """The caller: by its ``Authorization`` header, else by its Lookout session cookie."""
    session_id = session_cookie(connection) if not authorization and control.sessions else None
    if control.sessions is not None and session_id:
        identity = await control.sessions.identify(session_id)
        if identity is None:
            raise Unauthenticated("your Lookout session has ended: sign in again", scheme=SESSION_SCHEME)
        return identity
    client = connection.client.host if connection.client else ""
    return await control.authentication.identify(authorization, client=client)


def session_cookie(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    """The Lookout session id the browser sent, if any."""
    return connection.cookies.get(SECURE_SESSION_COOKIE) or connection.cookies.get(SESSION_COOKIE) or ""


def require_executor(connection: ASGIConnection[Any, Any, Any, Any], executor_id: str) -> None:
    """Raise 403 unless the caller's credential may act as executor ``executor_id``
    (the second half of an :class:`AsExecutor` policy, once the body is decoded)."""
    control = services_of(connection.app.state).access
    identity = identity_of(connection)
    if identity is None or not control.may_act_as(identity, executor_id):
        name = identity.name if identity else "anonymous"
        raise PermissionDenied(
            f"{name} may not act as executor {executor_id!r}: its credential does not name that id",
            field="executorId",
        )


def identity_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Identity | None:
    identity = connection.scope.get(IDENTITY)
    return identity if isinstance(identity, Identity) else None


Effective = Public | Authenticated | Requires | OnQueue | OwnerOr | Watching | AsExecutor


def _effective(
    policy: Policy | None, settings: AuthSettings, connection: ASGIConnection[Any, Any, Any, Any]
) -> Effective:
    if policy is None and connection.scope.get("method") == "OPTIONS":
        return Public()  # Litestar's own answer listing the allowed methods reveals nothing
    if policy is None:
        log.error("route without an access policy", path=connection.scope.get("path"))
        raise InternalServerException(detail="this route declares no access policy")
    if isinstance(policy, PublicIf):
        return Public() if getattr(settings, policy.flag) else policy.otherwise
    return policy


async def _allowed(
    policy: Effective,
    identity: Identity,
    control: AccessControl,
    connection: ASGIConnection[Any, Any, Any, Any],
) -> bool:
    permissions = control.permissions
    if isinstance(policy, Public | Authenticated):
        return True
    if isinstance(policy, Requires):
        return permissions.has(identity, policy.permission)
    if isinstance(policy, Watching):
        return policy.also is None or permissions.has(identity, policy.also)
    if isinstance(policy, AsExecutor):
        return permissions.has(identity, GlobalPermission.EXECUTE_JOBS)  # the id: require_executor
    store = services_of(connection.app.state).store
    if isinstance(policy, OwnerOr):
        if permissions.has(identity, policy.permission):
            return True
        name = connection.path_params.get(policy.path)
        return isinstance(name, str) and await control.owns_queue(store, identity, name)
    if permissions.has(identity, VERB_PERMISSION[policy.verb]):
        return True
    name = (
        connection.path_params.get(policy.path) if policy.path else await _body_field(connection, policy.body)
    )
    if not isinstance(name, str) or not name:
        return False  # no queue named: only the global permission can allow it
    return await control.may_on_queue(store, identity, name, policy.verb)


@functools.cache
def _field_decoder(field: str) -> msgspec.json.Decoder[Any]:
    """Decodes only ``field`` of a JSON object; the rest is skipped without being built."""
    return msgspec.json.Decoder(msgspec.defstruct("QueueField", [(field, object, None)]))


async def _body_field(connection: ASGIConnection[Any, Any, Any, Any], field: str) -> object:
    """One top-level field of the JSON body; the body stays cached for the handler."""
    if not isinstance(connection, Request):
        return None
    try:
        return getattr(_field_decoder(field).decode(await connection.body() or b"{}"), field)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # malformed: only the global permission allows it


def _what(policy: Effective) -> str:
    if isinstance(policy, OwnerOr):
        return f"do this without owning the queue or the {policy.permission.value} permission"
    if isinstance(policy, Requires):
        return f"do this without the {policy.permission.value} permission"
    if isinstance(policy, Watching) and policy.also is not None:
        return f"do this without the {policy.also.value} permission"
    if isinstance(policy, AsExecutor):
        return f"do this without the {GlobalPermission.EXECUTE_JOBS.value} permission"
    if isinstance(policy, OnQueue):
        return f"{policy.verb.value} on this queue"
    return "do this"
