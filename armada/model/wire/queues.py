"""Queue API bodies beyond the :class:`~armada.model.queues.Queue` itself."""

from __future__ import annotations

from armada.model.leases import Name
from armada.model.queues import Queue
from armada.model.wire.base import Request, Response
from armada.model.wire.jobs import StateName


class QueueList(Request):
    """Body of the batched create/update calls."""

    queues: list[Queue]


class QueueFailure(Response):
    queue: Queue
    error: str


class BatchQueueResponse(Response):
    """Queues of a batch that could not be created or updated, with the reason each."""

    failed_queues: list[QueueFailure] = []


class ActiveQueues(Response):
    queues: list[str] = []


class ActiveQueuesResponse(Response):
    active_queues_by_pool: dict[str, ActiveQueues] = {}


class StreamingQueue(Response):
    """One line of ``GET /v1/batched/queues``: a queue, or the end marker."""

    queue: Queue | None = None
    end: dict[str, str] | None = None


class StreamingQueueMessage(Response):
    Event: StreamingQueue


class StreamingQueueLine(Response):
    result: StreamingQueueMessage


class QueuePreemptRequest(Request):
    """Preempt a queue's running jobs; filters (empty: any) by priority class and pool.
    ``name`` (upstream's body carries it) may be left out, else it must be the path's."""

    name: Name = ""
    priority_classes: list[str] = []
    pools: list[str] = []


class QueueCancelRequest(Request):
    """Cancel a queue's jobs; filters (empty: any unfinished) by class, pool and state.
    ``name`` (upstream's body carries it) may be left out, else it must be the path's."""

    name: Name = ""
    priority_classes: list[str] = []
    pools: list[str] = []
    job_states: list[StateName] = []
