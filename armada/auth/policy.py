"""Route access policies: every route handler declares exactly one.

Declare it with the handler's ``opt``, e.g.::

    @post("/v1/queue", opt=requires(GlobalPermission.CREATE_QUEUE))
    @post("/v1/job/submit", opt=on_queue(QueueVerb.SUBMIT, body="queue"))
    @post("/v1/job-set/{queue:str}/{job_set_id:str}", opt=on_queue(QueueVerb.WATCH, path="queue"))
    @post("/v1/job/details", opt=watching())
    @post("/v1/executor/lease", opt=as_executor(body="executorId"))
    @get("/health", opt=public())

:mod:`armada.api.access` enforces the policy before the handler runs, and refuses to serve
a route that declares none. The policies are plain data so that tests can enumerate them.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from armada.auth.permissions import GlobalPermission
from armada.model.queues import QueueVerb

#: Key of the policy in a route handler's ``opt``.
ACCESS = "access"


class Public(msgspec.Struct, frozen=True):
    """Anyone, with or without credentials (bad credentials are still refused)."""


class Authenticated(msgspec.Struct, frozen=True):
    """Any authenticated caller (including ``anonymous`` when anonymous access is on)."""


class Requires(msgspec.Struct, frozen=True):
    """Callers holding a global permission."""

    permission: GlobalPermission


class OnQueue(msgspec.Struct, frozen=True):
    """Callers allowed ``verb`` on the queue named by a path parameter or a JSON body field.

    The global permission covering the verb is enough on its own; without it the request
    must name a queue that grants the verb. A queue that does not exist is left for the
    handler to report.
    """

    verb: QueueVerb
    path: str = ""
    body: str = ""


class OwnerOr(msgspec.Struct, frozen=True):
    """Callers holding ``permission``, or owners of the queue named by the path parameter
    ``path`` (what an owner may change is checked by :mod:`armada.auth.queue_changes`).
    A queue that does not exist is left for the handler to report."""

    permission: GlobalPermission
    path: str


class Watching(msgspec.Struct, frozen=True):
    """Any authenticated caller (holding ``also``, if set), but the handler answers only
    for queues the caller may ``watch``: it filters through the request's
    :class:`~armada.services.visibility.ReadScope`. Reads name jobs by id, or no queue at
    all, so the guard cannot decide; the policy records that the handler does.
    """

    also: GlobalPermission | None = None


class AsExecutor(msgspec.Struct, frozen=True):
    """Callers holding ``execute_jobs`` whose credential may act as the executor id named
    by the JSON body field ``body``. The guard checks the permission; the handler checks
    the id once the body is decoded (:func:`armada.api.access.require_executor`), so that
    lease calls, which carry every run id of a cluster every second, are parsed once."""

    body: str


class PublicIf(msgspec.Struct, frozen=True):
    """Public when the ``auth`` setting ``flag`` is true, else ``otherwise``."""

    flag: Literal["public_schema", "public_metrics"]
    otherwise: Public | Authenticated | Requires


Policy = Public | Authenticated | Requires | OnQueue | OwnerOr | Watching | AsExecutor | PublicIf


def public() -> dict[str, Any]:
    return {ACCESS: Public()}


def authenticated() -> dict[str, Any]:
    return {ACCESS: Authenticated()}


def requires(permission: GlobalPermission) -> dict[str, Any]:
    return {ACCESS: Requires(permission)}


def on_queue(verb: QueueVerb, *, path: str = "", body: str = "") -> dict[str, Any]:
    if bool(path) == bool(body):
        raise ValueError("name the queue's path parameter or its body field, not both")
    return {ACCESS: OnQueue(verb, path=path, body=body)}


def owner_or(permission: GlobalPermission, *, path: str) -> dict[str, Any]:
    return {ACCESS: OwnerOr(permission, path=path)}


def watching(also: GlobalPermission | None = None) -> dict[str, Any]:
    return {ACCESS: Watching(also)}


def as_executor(*, body: str) -> dict[str, Any]:
    return {ACCESS: AsExecutor(body)}


def public_if(flag: Literal["public_schema", "public_metrics"], otherwise: Policy) -> dict[str, Any]:
    if isinstance(otherwise, OnQueue | OwnerOr | Watching | AsExecutor | PublicIf):
        raise ValueError("otherwise must not depend on a queue or another setting")
    return {ACCESS: PublicIf(flag, otherwise)}


def policy_of(opt: dict[str, Any]) -> Policy | None:
    policy = opt.get(ACCESS)
    kinds = Public | Authenticated | Requires | OnQueue | OwnerOr | Watching | AsExecutor | PublicIf
    return policy if isinstance(policy, kinds) else None
