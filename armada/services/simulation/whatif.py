"""Recorded vs replayed-with-current-settings vs candidate: the comparison ``armada simulate`` prints."""

from __future__ import annotations

import time
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
    candidate: Candidate, config: SchedulingConfig, queues: list[QueueSpec]
) -> tuple[SchedulingConfig, list[QueueSpec]]:
    """The candidate's config and queues (raises ``ValueError``/``msgspec.ValidationError``
    naming the field)."""
    merged = {**msgspec.to_builtins(config), **candidate.scheduling}
    new_config = msgspec.convert(merged, SchedulingConfig)
    by_name = {queue.name: queue for queue in queues}
    for change in candidate.queues:
        if change.name not in by_name:
            raise ValueError(f"queues: no queue {change.name!r} in the recorded log")
        fields = {k: v for k, v in msgspec.to_builtins(change).items() if k != "name"}
        by_name[change.name] = msgspec.convert(
            {**msgspec.to_builtins(by_name[change.name]), **fields}, QueueSpec
        )
    return new_config, list(by_name.values())


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
    queues = list(recorded.queues.values())
    settings = [("current", config, queues)]
    if candidate is not None:
        settings.append(("candidate", *candidate_settings(candidate, config, queues)))
    window = (recorded.since, recorded.until)
    dominant = list(drf_multipliers(config.dominant_resource_fairness_resources_to_consider))
    scenarios = []
    current_fair_share: dict[str, dict[str, float]] = {}
    for name, scenario_config, scenario_queues in settings:
        started = time.perf_counter()
        replayed = replay(
            recorded, scenario_queues, scenario_config, cycle_period, recorded_cycles=recorded_cycles
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
