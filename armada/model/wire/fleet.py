"""Wire types of the fleet controls: executor settings, node cordons, and preempt or
cancel on an executor or a node (upstream's ``api.Executor``, ``api.Node`` and
``binoculars.Cordon`` messages, camelCase)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

from armada.model.leases import Name
from armada.model.numbers import Count
from armada.model.wire.base import Request, Response

#: Why an executor or node is cordoned: shown to operators, kept short.
Reason = Annotated[str, msgspec.Meta(max_length=1024)]
#: A filter list (queues, priority classes): as many as a fleet could name.
Names = Annotated[list[Name], msgspec.Meta(max_length=1000)]


class ExecutorSettingsUpsertRequest(Request):
    """``PUT /v1/executor_settings/{name}``; ``name`` in the body, if given, must match the path."""

    name: Name = ""
    cordoned: bool = False
    cordon_reason: Reason = ""


class ExecutorSettingsDeleteRequest(Request):
    name: Name = ""


class ExecutorJobsRequest(Request):
    """Preempt or cancel the jobs running on an executor; filters (empty: any) by queue
    and priority class (upstream's ``ExecutorPreemptRequest``/``ExecutorCancelRequest``)."""

    name: Name = ""
    queues: Names = []
    priority_classes: Names = []


class NodeJobsRequest(Request):
    """Preempt or cancel the jobs running on one node of an executor (upstream's
    ``NodePreemptRequest``/``NodeCancelRequest``)."""

    name: Name = ""
    executor: Name = ""
    queues: Names = []
    priority_classes: Names = []


class NodeCordonRequest(Request):
    """``POST /v1/binoculars/cordon`` (upstream's ``CordonRequest``) and ``…/uncordon``.

    ``executor`` may be left out when exactly one executor has a node of that name.
    """

    node_name: Name
    executor: Name = ""
    reason: Reason = ""


class NodeSummary(Response):
    name: str
    unschedulable: bool = False
    ready: bool = True
    #: Set when an operator cordoned the node (``armada node cordon``).
    cordoned: bool = False
    cordon_reason: str = ""
    running_jobs: Count = 0


class ExecutorSummary(Response):
    name: str
    pool: str = ""
    #: ``None``: the executor has settings but has not reported (or was forgotten).
    last_seen: datetime | None = None
    cordoned: bool = False
    cordon_reason: str = ""
    cordoned_by: str = ""
    running_jobs: Count = 0
    nodes: list[NodeSummary] = []


class ExecutorList(Response):
    """``GET /v1/executors``: every executor known, with its settings and nodes."""

    executors: list[ExecutorSummary] = []
