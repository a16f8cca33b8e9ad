"""Running a ``queueConfig`` case: create, update, then check the queue through the API.

The case works on a fresh queue named ``<queue>-<short id>`` so that deleting it never
disturbs the queue other cases submit to.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec

from armada.client import ArmadaApiError, AsyncArmadaClient
from armada.model.queues import Queue
from armada.testsuite.jobs import CaseFailed, short_id
from armada.testsuite.spec import QueueConfig


async def run_queue_case(client: AsyncArmadaClient, base_name: str, config: QueueConfig) -> None:
    name = f"{base_name}-{short_id()}"
    try:
        spec = config.setup.get("queueSpec") or {}
        await client.create_queue(_queue(name, spec))
        if config.update is not None:
            current = msgspec.to_builtins(await client.get_queue(name))
            await client.update_queue(_queue(name, {**current, **config.update}))
        for assertion in config.assertions:
            for kind, expected in assertion.items():
                await _check(client, name, kind, expected)
    except ArmadaApiError as exc:
        raise CaseFailed(f"queue {name}: {exc}") from exc
    finally:
        with contextlib.suppress(ArmadaApiError):
            await client.delete_queue(name)


def _queue(name: str, fields: dict[str, Any]) -> Queue:
    try:
        return msgspec.convert({**fields, "name": name}, Queue)
    except msgspec.ValidationError as exc:
        raise CaseFailed(f"bad queue definition: {exc}") from exc


async def _check(client: AsyncArmadaClient, name: str, kind: str, expected: Any) -> None:
    if kind == "appearsInStream":
        listed = any(queue.name == name for queue in await client.list_queues())
        if listed != bool(expected):
            raise CaseFailed(f"queue {name} {'missing from' if expected else 'listed in'} the queue stream")
    elif kind == "matches":
        actual = msgspec.to_builtins(await client.get_queue(name))
        wrong = {k: actual.get(k) for k, v in dict(expected).items() if actual.get(k) != v}
        if wrong:
            raise CaseFailed(f"queue {name} differs: expected {expected}, got {wrong}")
    elif kind == "deleted":
        if expected:
            await client.delete_queue(name)
        try:
            await client.get_queue(name)
        except ArmadaApiError as exc:
            if exc.status == 404 and expected:
                return
            raise
        if expected:
            raise CaseFailed(f"queue {name} still exists after deletion")
    else:
        raise CaseFailed(f"unknown queue assertion {kind!r}")
