"""Per-pool scheduling policy: the ``scheduling.pools`` list, in upstream Armada's shape.

Each entry names a pool and overrides the global ``scheduling`` defaults for it; pools not
listed use the defaults. Upstream keys this scheduler does not implement are accepted only
unset: a config that sets one is refused at start-up, naming the key, never run half-applied.
"""

from __future__ import annotations

from typing import Any

import msgspec

from armada.model.durations import parse_duration
from armada.scheduling.requirements import Toleration

#: Upstream pool keys this scheduler does not implement (refused when set), and why.
NOT_IMPLEMENTED = {
    "experimentalOptimiser": "the optimiser",
    "experimentalMarketScheduling": "market scheduling",
    "experimentalRunReconciliation": "run reconciliation",
    "experimentalSubmissionGroup": "submission groups",
    "experimentalProtectUncappedAdjustedFairShare": "uncapped adjusted fair share protection",
}


class DrfResource(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """A resource counted by dominant resource fairness, its share multiplied by ``multiplier``."""

    name: str
    #: E.g. ``8`` for ``nvidia.com/gpu``: holding 10% of a pool's GPUs costs a queue 0.8.
    multiplier: float = 1.0


#: ``"cpu"`` or ``{name: nvidia.com/gpu, multiplier: 8}`` (upstream accepts both).
DrfEntry = str | DrfResource


def drf_multipliers(entries: list[DrfEntry]) -> dict[str, float]:
    """Resource name -> cost multiplier of a ``dominantResourceFairnessResourcesToConsider`` list."""
    return {e: 1.0 for e in entries if isinstance(e, str)} | {
        e.name: e.multiplier for e in entries if isinstance(e, DrfResource)
    }


class RateLimit(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """A token bucket: ``maximumRate`` actions per second, at most ``maximumBurst`` at once."""

    maximum_rate: float = 0.0
    maximum_burst: int = 0


class AwayPool(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    name: str


class JobDefaults(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    #: Tolerations jobs are given in this pool (e.g. of the taint its GPU nodes carry).
    tolerations: list[Toleration] = msgspec.field(default_factory=list)


class PoolConfig(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """One pool's policy; unset fields take the global ``scheduling`` value."""

    name: str
    #: Pools whose idle capacity this pool's preemptible jobs may borrow ("away" scheduling).
    away_pools: list[AwayPool | str] = msgspec.field(default_factory=list)
    #: Overrides ``scheduling.protectedFractionOfFairShare`` in this pool.
    protected_fraction_of_fair_share: float | None = None
    #: Overrides ``scheduling.dominantResourceFairnessResourcesToConsider`` (with multipliers).
    dominant_resource_fairness_resources_to_consider: list[DrfEntry] | None = None
    #: A job that ran less than this (Go duration, e.g. ``5m``) is charged as if it ran this long.
    short_job_penalty_cutoff: str = ""
    #: Token bucket on fair-share preemptions in this pool; unset: no limit.
    fairshare_preemption_rate_limit: RateLimit | None = None
    #: No job is scheduled "home" in this pool.
    disable_home_scheduling: bool = False
    #: No job is scheduled "away" in this pool.
    disable_away_scheduling: bool = False
    #: No gang is scheduled "away" in this pool.
    disable_gang_away_scheduling: bool = False
    #: No fair-share preemption in this pool.
    disable_fairshare_scheduling: bool = False
    #: No urgency (priority) preemption in this pool.
    disable_urgency_scheduling: bool = False
    #: Evict by scheduled-at priority only, not jobs from other pools first.
    disable_preempt_cross_pool_jobs_first: bool = False
    job_defaults: JobDefaults | None = None
    #: Jobs requesting any of these resources are not scheduled in this pool.
    experimental_unscheduled_resources: list[str] = msgspec.field(default_factory=list)
    experimental_optimiser: Any = None
    experimental_market_scheduling: Any = None
    experimental_run_reconciliation: Any = None
    experimental_submission_group: Any = None
    experimental_protect_uncapped_adjusted_fair_share: Any = None

    def __post_init__(self) -> None:
        for key, what in NOT_IMPLEMENTED.items():
            value = getattr(self, _snake(key))
            if value is not None and value is not False and value != "":
                raise ValueError(f"pools[{self.name}].{key}: {what} is not supported by this scheduler")
        if self.name in self.away_pool_names:
            raise ValueError(f"pools[{self.name}].awayPools: a pool cannot be its own away pool")
        if self.short_job_penalty_cutoff:
            try:
                parse_duration(self.short_job_penalty_cutoff)
            except ValueError as exc:
                raise ValueError(f"pools[{self.name}].shortJobPenaltyCutoff: {exc}") from None
        limit = self.fairshare_preemption_rate_limit
        if limit is not None and (limit.maximum_rate < 0 or limit.maximum_burst < 0):
            raise ValueError(f"pools[{self.name}].fairsharePreemptionRateLimit must be >= 0")
        if self.protected_fraction_of_fair_share is not None and self.protected_fraction_of_fair_share < 0:
            raise ValueError(f"pools[{self.name}].protectedFractionOfFairShare must be >= 0")

    @property
    def away_pool_names(self) -> list[str]:
        return [p if isinstance(p, str) else p.name for p in self.away_pools]

    @property
    def short_job_penalty_seconds(self) -> float:
        return parse_duration(self.short_job_penalty_cutoff) if self.short_job_penalty_cutoff else 0.0

    @property
    def default_tolerations(self) -> tuple[Toleration, ...]:
        return tuple(self.job_defaults.tolerations) if self.job_defaults else ()


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
