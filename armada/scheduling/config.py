"""Scheduling configuration: the ``scheduling`` area of the application settings.

Keys are camelCase and defaults follow upstream Armada's scheduler configuration, so an
upstream ``scheduling:`` block mostly carries over unchanged.
"""

from __future__ import annotations

import functools

import msgspec

from armada.model.retry_engine import RetryEngineSettings
from armada.model.taints import Taint
from armada.scheduling.floating import FloatingResource
from armada.scheduling.pool_config import DrfEntry, PoolConfig, drf_multipliers
from armada.scheduling.requirements import Toleration

DEFAULT_PRIORITY_CLASS = "armada-default"
PREEMPTIBLE_PRIORITY_CLASS = "armada-preemptible"


class WellKnownNodeType(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """A set of nodes named by the taints they carry (upstream's ``wellKnownNodeTypes``): a node
    is of the type when it has all of them. Away scheduling tolerates them (``awayNodeTypes``)."""

    name: str
    taints: list[Taint] = msgspec.field(default_factory=list)


class AwayNodeType(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """Where a priority class's jobs may run away from home, and at what (lower) priority."""

    #: The priority the job runs at while away: home jobs reclaim the capacity from it.
    priority: int
    well_known_node_type_name: str


class PriorityClass(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """A named class of jobs: how urgent they are and whether they may be preempted."""

    #: Higher runs first within a queue, and may urgency-preempt lower *preemptible* classes.
    priority: int = 1000
    #: Jobs of a preemptible class may be evicted for urgency or to restore fair share.
    preemptible: bool = False
    #: Cap on the fraction of each pool resource one queue may hold in this class (missing = 1.0).
    maximum_resource_fraction_per_queue: dict[str, float] = msgspec.field(default_factory=dict)
    #: Per-pool replacement of ``maximumResourceFractionPerQueue``: pool -> resource -> fraction.
    maximum_resource_fraction_per_queue_by_pool: dict[str, dict[str, float]] = msgspec.field(
        default_factory=dict
    )
    #: Node types this class's jobs may borrow away from home (needs ``preemptible``): idle
    #: capacity of the home pool's ``awayPools`` whose nodes carry the type's taints.
    away_node_types: list[AwayNodeType] = msgspec.field(default_factory=list)

    def fractions_in(self, pool: str) -> dict[str, float]:
        """The per-queue resource caps of this class in ``pool``."""
        return self.maximum_resource_fraction_per_queue_by_pool.get(
            pool, self.maximum_resource_fraction_per_queue
        )


def _default_priority_classes() -> dict[str, PriorityClass]:
    return {
        DEFAULT_PRIORITY_CLASS: PriorityClass(
            priority=1000, preemptible=False, maximum_resource_fraction_per_queue={"cpu": 1.0, "memory": 1.0}
        ),
        PREEMPTIBLE_PRIORITY_CLASS: PriorityClass(priority=1000, preemptible=True),
    }


class SchedulingConfig(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """Everything the scheduling core needs to know that is not the cluster or the queues."""

    #: Priority classes by name; jobs name one (or get ``defaultPriorityClassName``).
    priority_classes: dict[str, PriorityClass] = msgspec.field(default_factory=_default_priority_classes)
    #: Class given to jobs that name none.
    default_priority_class_name: str = DEFAULT_PRIORITY_CLASS
    #: The Kubernetes priority class put on every pod the executors create, whatever the job's
    #: Armada priority class (which still drives scheduling and preemption); ``""``: pods get
    #: none; unset: the job's own. For clusters whose priority classes differ from Armada's.
    priority_class_name_override: str | None = None
    #: A queue is only fair-share preempted while its actual share exceeds this multiple of its
    #: (demand-adjusted) fair share. ``1.0`` = reclaim anything above the fair share.
    protected_fraction_of_fair_share: float = 1.0
    #: Half-life in seconds of the decayed past usage added to a queue's cost ("fair share over
    #: time"). ``0`` disables history: plain instantaneous dominant resource fairness.
    usage_half_life: float = 0.0
    #: Resources whose share counts towards a queue's dominant share (others are ignored); an
    #: entry ``{name, multiplier}`` multiplies that resource's share (e.g. a GPU counts 8x).
    dominant_resource_fairness_resources_to_consider: list[DrfEntry] = msgspec.field(
        default_factory=lambda: ["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage"]
    )
    #: Global token bucket: jobs per second scheduled over all queues and pools.
    maximum_scheduling_rate: float = 100.0
    #: Global token bucket capacity (the most jobs one cycle can schedule after idling).
    maximum_scheduling_burst: int = 1000
    #: Per-queue token bucket: jobs per second.
    maximum_per_queue_scheduling_rate: float = 50.0
    #: Per-queue token bucket capacity.
    maximum_per_queue_scheduling_burst: int = 1000
    #: How many queued jobs per queue (in queue order) one cycle looks at; ``0`` = no limit.
    max_queue_lookback: int = 100_000
    #: Per pool and cycle, stop once this fraction of a resource has been newly scheduled.
    maximum_resource_fraction_to_schedule: dict[str, float] = msgspec.field(
        default_factory=lambda: {"cpu": 1.0, "memory": 1.0}
    )
    #: Time budget of one cycle in seconds; when spent the cycle stops cleanly. ``0`` = no budget.
    max_scheduling_duration: float = 5.0
    #: Whether fair-share preemption runs at all (urgency preemption always does).
    enable_fair_share_preemption: bool = True
    #: Seconds between refreshes of the start-time forecasts (docs/forecast.md); ``0`` = none.
    forecast_interval: float = 10.0
    #: How far ahead forecasts simulate, in seconds; jobs not started by then are "not within".
    forecast_horizon: float = 7 * 24 * 3600.0
    #: Runtime in seconds assumed for jobs with no hint, no learned runs and no deadline below it.
    forecast_default_runtime: float = 3600.0
    #: Forecasts pause while more jobs than this are queued or running: a refresh's CPU grows
    #: with the backlog (docs/performance.md) and runs in this process. ``0`` = no limit.
    forecast_max_jobs: int = 200_000
    #: The retry engine: retry policies decide failed runs (see docs/retries.md).
    retry_policy: RetryEngineSettings = msgspec.field(default_factory=RetryEngineSettings)
    #: Per-pool policy (upstream's ``pools``): each entry overrides the settings above for one
    #: pool; see docs/scheduling.md, "Pools".
    pools: list[PoolConfig] = msgspec.field(default_factory=list)
    #: Resources bound to no node (licences, connections) with a quantity per pool: jobs request
    #: them like any resource; see docs/scheduling.md, "Floating resources".
    floating_resources: list[FloatingResource] = msgspec.field(default_factory=list)
    #: Node types by their taints, named by priority classes' ``awayNodeTypes``.
    well_known_node_types: list[WellKnownNodeType] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        if self.default_priority_class_name not in self.priority_classes:
            raise ValueError(
                f"defaultPriorityClassName {self.default_priority_class_name!r} is not configured"
            )
        if self.usage_half_life < 0 or self.protected_fraction_of_fair_share < 0:
            raise ValueError("usageHalfLife and protectedFractionOfFairShare must be >= 0")
        if self.forecast_interval < 0 or self.forecast_horizon <= 0 or self.forecast_default_runtime <= 0:
            raise ValueError("forecastInterval must be >= 0, forecastHorizon and forecastDefaultRuntime > 0")
        if self.forecast_max_jobs < 0:
            raise ValueError("forecastMaxJobs must be >= 0")
        names = [p.name for p in self.pools]
        if len(set(names)) < len(names):
            raise ValueError("pools: a pool is configured twice")
        known = {t.name for t in self.well_known_node_types}
        for name, pc in self.priority_classes.items():
            if pc.away_node_types and not pc.preemptible:
                raise ValueError(f"priorityClasses.{name}.awayNodeTypes: the class is not preemptible")
            for i, away in enumerate(pc.away_node_types):
                if away.well_known_node_type_name not in known:
                    raise ValueError(
                        f"priorityClasses.{name}.awayNodeTypes[{i}].wellKnownNodeTypeName: "
                        f"{away.well_known_node_type_name!r} is not in wellKnownNodeTypes"
                    )

    @property
    def away_scheduling(self) -> bool:
        """Whether any pool borrows from another (the cycle then runs away passes and reclaims)."""
        return any(p.away_pools for p in self.pools)

    def away_tolerations(self, priority_class: str) -> tuple[Toleration, ...]:
        """Tolerations of the taints of the node types jobs of ``priority_class`` may borrow
        (none: the class never runs away)."""
        types = {t.name: t for t in self.well_known_node_types}
        return tuple(
            Toleration(key=taint.key, value=taint.value, effect=taint.effect)
            for away in self.priority_class(priority_class).away_node_types
            for taint in types[away.well_known_node_type_name].taints
        )

    def default_tolerations_by_pool(self) -> dict[str, tuple[Toleration, ...]]:
        """Pool -> the tolerations its jobs are given (pools that give some)."""
        return {p.name: p.default_tolerations for p in self.pools if p.default_tolerations}

    def floating_by_pool(self) -> dict[str, dict[str, int]]:
        """Pool -> floating resource -> units (pools with some floating resource)."""
        pools = {entry.name for f in self.floating_resources for entry in f.pools}
        return {pool: self.floating_in(pool) for pool in sorted(pools)}

    def floating_in(self, pool: str) -> dict[str, int]:
        """Floating resource -> units ``pool`` has of it (resources it has none of left out)."""
        quantities = {f.name: f.quantity_in(pool) for f in self.floating_resources}
        return {name: units for name, units in quantities.items() if units is not None}

    def pool_config(self, pool: str) -> PoolConfig:
        """The policy of ``pool`` (its ``pools`` entry, else all defaults)."""
        for config in self.pools:
            if config.name == pool:
                return config
        return _default_pool_config(pool)

    def drf_multipliers(self, pool: str) -> dict[str, float]:
        """DRF resource -> share multiplier in ``pool``."""
        own = self.pool_config(pool).dominant_resource_fairness_resources_to_consider
        return drf_multipliers(self.dominant_resource_fairness_resources_to_consider if own is None else own)

    def protected_fraction(self, pool: str) -> float:
        own = self.pool_config(pool).protected_fraction_of_fair_share
        return self.protected_fraction_of_fair_share if own is None else own

    def priority_class(self, name: str) -> PriorityClass:
        """The class called ``name``, or the default class for an empty name."""
        return self.priority_classes[name or self.default_priority_class_name]


@functools.lru_cache(maxsize=1024)
def _default_pool_config(pool: str) -> PoolConfig:
    """All defaults for ``pool`` (frozen, so shared: a job ending asks once per job)."""
    return PoolConfig(name=pool)
