"""Recorded vs replayed-with-current-settings vs candidate: the comparison ``armada simulate`` prints."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.scheduling import QueueSpec, SchedulingConfig
from armada.scheduling.pool_config import drf_multipliers
from armada.services.simulation.figures import Figures, figures
from armada.services.simulation.recorded import RecordedLog, read_recorded
from armada.services.simulation.replaying import replay


class CandidateQueue(msgspec.Struct, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    """A queue's settings in the candidate; fields left out keep the recorded value."""

    name: str
    priority_factor: float | None = None
    resource_limits_by_priority_class_name: dict[str, dict[str, float]] | None = None
    cordoned: bool | None = None


class Candidate(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """``--config candidate.yaml``: ``scheduling`` keys replace the current settings' (camelCase,
    as in the settings file); ``queues`` change the named queues' settings."""

    scheduling: dict[str, Any] = msgspec.field(default_factory=dict)
    queues: list[CandidateQueue] = msgspec.field(default_factory=list)


class Scenario(msgspec.Struct, rename="camel", frozen=True):
    name: str
    figures: Figures
    #: Scheduling cycles the replay ran (0 for the recorded log) and its wall-clock seconds.
    cycles: int = 0
    seconds: float = 0.0


class Comparison(msgspec.Struct, rename="camel", frozen=True):
    since: float
    until: float
    jobs: int
    #: ``recorded``, ``current`` and, with a candidate, ``candidate``.
    scenarios: list[Scenario]
    read_seconds: float


def candidate_settings(
    candidate: Candidate, config: SchedulingConfig, queues: Collection[QueueSpec]
) -> tuple[SchedulingConfig, Callable[[QueueSpec], QueueSpec]]:
    """The candidate's config, and a queue's settings under it (the fields it gives replace
    the recorded ones, whenever the log set them). Raises ``ValueError``/``msgspec.ValidationError``
    naming the field."""
    merged = {**msgspec.to_builtins(config), **candidate.scheduling}
    new_config = msgspec.convert(merged, SchedulingConfig)
    names = {queue.name for queue in queues}
    changes: dict[str, dict[str, Any]] = {}
    for change in candidate.queues:
        if change.name not in names:
            raise ValueError(f"queues: no queue {change.name!r} in the recorded log")
        changes[change.name] = {k: v for k, v in msgspec.to_builtins(change).items() if k != "name"}

    def settings(queue: QueueSpec) -> QueueSpec:
        fields = changes.get(queue.name)
        return queue if not fields else msgspec.convert({**msgspec.to_builtins(queue), **fields}, QueueSpec)

    for queue in queues:  # a bad value is refused now, not in the replay
        settings(queue)
    return new_config, settings


async def compare(
    engine: AsyncEngine,
    since: float,
    until: float,
    config: SchedulingConfig,
    cycle_period: float,
    candidate: Candidate | None = None,
    *,
    recorded_cycles: bool = True,
) -> Comparison:
    """Read the window and replay it with ``config`` (and the candidate's changes to it);
    ``recorded_cycles`` and ``cycle_period`` as :func:`replay` takes them."""
    started = time.perf_counter()
    recorded = await read_recorded(engine, since, until)
    read_seconds = time.perf_counter() - started
    return compare_recorded(
        recorded, config, cycle_period, candidate, read_seconds, recorded_cycles=recorded_cycles
    )


def compare_recorded(
    recorded: RecordedLog,
    config: SchedulingConfig,
    cycle_period: float,
    candidate: Candidate | None = None,
    read_seconds: float = 0.0,
    *,
    recorded_cycles: bool = True,
) -> Comparison:
    settings: list[tuple[str, SchedulingConfig, Callable[[QueueSpec], QueueSpec] | None]]
    settings = [("current", config, None)]
    if candidate is not None:
        settings.append(("candidate", *candidate_settings(candidate, config, recorded.queues.values())))
    window = (recorded.since, recorded.until)
    dominant = list(drf_multipliers(config.dominant_resource_fairness_resources_to_consider))
    scenarios = []
    current_fair_share: dict[str, dict[str, float]] = {}
    for name, scenario_config, queue_settings in settings:
        started = time.perf_counter()
        replayed = replay(
            recorded,
            scenario_config,
            cycle_period,
            queue_settings=queue_settings,
            recorded_cycles=recorded_cycles,
        )
        seconds = time.perf_counter() - started
        if name == "current":
            current_fair_share = replayed.fair_share
        found = figures(replayed.outcomes, recorded.timeline, replayed.fair_share, dominant, window)
        scenarios.append(Scenario(name, found, replayed.cycles, seconds))
    scenarios.insert(
        0,
        Scenario(
            "recorded", figures(recorded.outcomes, recorded.timeline, current_fair_share, dominant, window)
        ),
    )
    return Comparison(recorded.since, recorded.until, len(recorded.jobs), scenarios, read_seconds)
