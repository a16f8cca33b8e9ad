"""Queues as the scheduler sees them."""

from __future__ import annotations

import msgspec


class QueueSpec(msgspec.Struct, frozen=True, rename="camel"):
    """A queue's scheduling settings.

    ``priorityFactor`` is the queue's *weight*: a queue with factor 2 gets twice the share of a
    queue with factor 1 (note: upstream Armada divides by it instead).
    """

    name: str
    priority_factor: float = 1.0
    #: priority class -> resource -> fraction of the pool this queue may hold in that class.
    resource_limits_by_priority_class_name: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)
    #: A cordoned queue keeps its running jobs but gets nothing new scheduled.
    cordoned: bool = False

    def __post_init__(self) -> None:
        if not self.priority_factor > 0:
            raise ValueError(f"queue {self.name}: priorityFactor must be > 0")
