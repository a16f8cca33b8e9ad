"""Reading a run's log through the pods/log API (kubernetes-asyncio), for log requests.

The API server selects (``tailLines``, ``sinceSeconds``, ``limitBytes``, ``previous``,
``container``) and stamps the lines (``timestamps=true``, always: the answer carries each
line's time). The client has no ``sinceTime``: a request with one fetches from the
whole seconds before it and is selected here, with tail and byte limit applied after it,
as the API server would.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from kubernetes_asyncio import client

from armada.executor.backends.kube_calls import KubeCalls, KubeError
from armada.executor.log_lines import LogMissing, is_stamp, parse, select
from armada.model.leases import LogOrder
from armada.model.wire.logs import LogLine


async def read_pod_log(
    calls: KubeCalls, core: client.CoreV1Api, namespace: str, name: str, order: LogOrder, timeout: float
) -> list[LogLine]:
    """The lines of pod ``namespace/name`` that ``order`` selects; a pod (or previous
    container) the cluster no longer has is :class:`LogMissing`."""
    options: dict[str, Any] = {"timestamps": True, "previous": order.previous}
    if order.container:
        options["container"] = order.container
    since = order.since_seconds
    if order.since_time is not None:
        before = max(1, math.ceil(time.time() - order.since_time.timestamp()) + 1)
        since = before if since is None else min(since, before)
    else:
        if order.tail_lines is not None:
            options["tail_lines"] = order.tail_lines
        if order.limit_bytes is not None:
            options["limit_bytes"] = order.limit_bytes
    if since is not None:
        options["since_seconds"] = max(1, since)
    try:
        async with asyncio.timeout(timeout):
            text = await calls.text(core.read_namespaced_pod_log, name, namespace, **options)
    except KubeError as exc:
        if exc.status in (400, 404):  # no such pod, container, or previous instance
            raise LogMissing(exc.message) from exc
        raise
    if "limit_bytes" in options and not text.endswith("\n"):
        text = _without_cut_stamp(text)
    return select(parse(text), order)


def _without_cut_stamp(text: str) -> str:
    """``text`` without a last line that ``limitBytes`` cut inside its stamp: that
    fragment holds none of the line (the limit counts the stamps), only part of its time."""
    start = text.rfind("\n") + 1
    moment, sep, _ = text[start:].partition(" ")
    return text if sep and is_stamp(moment) else text[:start]
