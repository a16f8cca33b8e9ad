"""Retry policy management: create, update, delete, read; and the queues' references to them.

Every change is a ``retryPolicy*`` event appended in a transaction that first reads the
``retry_policies`` and ``queues`` views, so "exists" and "no queue refers to it" are
checked atomically with the change. A queue may only name policies that exist, and a
policy a queue names cannot be deleted (409): a queue never silently loses its policy.
"""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.queue_views import queue_specs
from armada.eventstore.retry_policy_views import policy_exists, policy_spec, policy_specs
from armada.eventstore.store import EventStore
from armada.model.errors import Conflict, InvalidRequest, NotFound
from armada.model.events import RetryPolicyCreated, RetryPolicyDeleted, RetryPolicyUpdated
from armada.model.queues import Queue
from armada.model.retry import RetryPolicy, check_policy
from armada.model.retry_engine import RetryEngineSettings


def _decode(spec: Any) -> RetryPolicy:
    return msgspec.convert(spec, RetryPolicy)


async def _exists(conn: AsyncConnection, name: str) -> bool:
    return await policy_exists(conn, name)


async def create_policy(store: EventStore, policy: RetryPolicy, user: str) -> None:
    check_policy(policy)
    async with store.transaction() as tx:
        if await _exists(await tx.views(), policy.name):
            raise Conflict(f"retry policy {policy.name!r} already exists", field="name")
        tx.append([RetryPolicyCreated(spec=policy, requestor=user)])


async def update_policy(store: EventStore, name: str, policy: RetryPolicy, user: str) -> None:
    if policy.name != name:
        raise InvalidRequest(f"the body names policy {policy.name!r} but the path {name!r}", field="name")
    check_policy(policy)
    async with store.transaction() as tx:
        if not await _exists(await tx.views(), name):
            raise NotFound(f"retry policy {name!r} does not exist", field="name")
        tx.append([RetryPolicyUpdated(spec=policy, requestor=user)])


async def delete_policy(store: EventStore, name: str, user: str) -> None:
    """Delete a policy; refused (409) while a queue names it."""
    async with store.transaction() as tx:
        if not await _exists(await tx.views(), name):
            raise NotFound(f"retry policy {name!r} does not exist", field="name")
        users = await _queues_naming(await tx.views(), name)
        if users:
            raise Conflict(
                f"retry policy {name!r} is used by queue(s) {', '.join(users)}; detach it first",
                field="name",
            )
        tx.append([RetryPolicyDeleted(name=name, requestor=user)])


async def _queues_naming(conn: AsyncConnection, name: str) -> list[str]:
    rows = await queue_specs(conn)
    return sorted(queue for queue, spec in rows if name in ((spec or {}).get("retryPolicies") or []))


async def get_policy(store: EventStore, name: str) -> RetryPolicy:
    async with store.engine.connect() as conn:
        spec = await policy_spec(conn, name)
    if spec is None:
        raise NotFound(f"retry policy {name!r} does not exist", field="name")
    return _decode(spec)


async def list_policies(store: EventStore) -> list[RetryPolicy]:
    """Every policy by name (a stored one this version cannot read is reported and skipped)."""
    async with store.engine.connect() as conn:
        rows = await policy_specs(conn, by_name=True)
    decoded = (store.unreadable.decode(_decode, spec, "retry policy", name) for name, spec in rows)
    return [policy for policy in decoded if policy is not None]


async def load_policies(conn: AsyncConnection) -> dict[str, RetryPolicy]:
    """All readable policies by name, for the scheduler's retry decisions."""
    found: dict[str, RetryPolicy] = {}
    for name, spec in await policy_specs(conn):
        try:
            found[name] = _decode(spec)
        except msgspec.ValidationError:
            continue  # an unreadable policy decides nothing: the legacy path applies
    return found


async def check_queue_policies(conn: AsyncConnection, queue: Queue) -> None:
    """A queue may only name retry policies that exist."""
    for i, name in enumerate(queue.retry_policies):
        if not await _exists(conn, name):
            raise InvalidRequest(f"retry policy {name!r} does not exist", field=f"retryPolicies[{i}]")


async def missing_default_policy(store: EventStore, settings: RetryEngineSettings) -> str:
    """Why ``defaultPolicyName`` applies to nothing ("" when it exists, or is off).

    Not a start-up failure: policies are created through the running server, so on a new
    database the named policy cannot exist yet. Until it does, queues that name no policy
    keep the legacy path; ``serve`` warns and ``armada admin check`` reports it.
    """
    name = settings.default_policy_name
    if not settings.enabled or not name:
        return ""
    async with store.engine.connect() as conn:
        if await policy_exists(conn, name):
            return ""
    return (
        f"scheduling.retryPolicy.defaultPolicyName: retry policy {name!r} does not exist;"
        " queues that name no policy keep the legacy retry path until it is created"
    )
