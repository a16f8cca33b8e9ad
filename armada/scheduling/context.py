"""Mutable bookkeeping shared by the pools of one cycle (never outlives the cycle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from armada.scheduling.config import SchedulingConfig
from armada.scheduling.decisions import OUT_OF_TIME, Preemption, Reasons
from armada.scheduling.figures import PoolFigures
from armada.scheduling.jobdb import JobDb

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class CycleContext:
    db: JobDb
    config: SchedulingConfig
    clock: Callable[[], float]
    deadline: float
    global_tokens: float
    #: tokens per queue name (missing = not limited yet this cycle; filled by the caller)
    queue_tokens: dict[str, float]
    #: per job row: leased or preempted in this cycle already (the db itself is not mutated)
    taken: BoolArray
    #: per scheduling key: may be scheduled at all this cycle (not rejected)
    key_ok: BoolArray
    #: per node row: takes no new jobs this cycle (its executor is behind); running jobs stay
    paused_nodes: BoolArray | None = None
    #: the cycle's time (seconds): short-job penalties held until later still count
    now: float = 0.0
    #: fair-share preemptions each rate-limited pool may still make this cycle
    preemption_tokens: dict[str, float] = field(default_factory=dict)
    #: False when only the decisions are wanted (simulations): a pool's turn ends once
    #: nothing more can be decided, leaving the reasons of the jobs not reached incomplete
    explain: bool = True
    reasons: Reasons = field(default_factory=Reasons)
    lease_rows: list[IntArray] = field(default_factory=list)
    lease_nodes: list[IntArray] = field(default_factory=list)
    lease_pools: list[str] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    considered: int = 0
    stopped: str = ""
    figures: PoolFigures = field(default_factory=dict)
    #: seconds each pool's turn took
    pool_seconds: dict[str, float] = field(default_factory=dict)

    def out_of_time(self) -> bool:
        if self.stopped:
            return True
        if self.clock() > self.deadline:
            self.stopped = "time budget"
            self.reasons.cycle = OUT_OF_TIME
        return bool(self.stopped)

    def record_leases(self, rows: IntArray, nodes: IntArray, pool: str) -> None:
        self.lease_rows.append(rows)
        self.lease_nodes.append(nodes)
        self.lease_pools.append(pool)
        self.taken[rows] = True
