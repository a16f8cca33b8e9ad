"""Away scheduling (upstream's ``awayPools`` and ``awayNodeTypes``): borrowing idle capacity.

A pool's preemptible jobs whose priority class names ``awayNodeTypes`` may run on the idle
capacity of the pool's ``awayPools`` once every pool has had its home turn: the away pass
is an ordinary pool turn over the away pool's nodes, for the home pool's queues, with the
node types' taints tolerated and no preemption. Such a job's run belongs to its home pool
(its lease names it, as upstream's run pool), and it counts in the away pool as its queue's
``<queue>-away`` share. In the away pool's own turn it is the first victim: a home job that
does not fit reclaims its capacity ("away capacity reclaimed"), whatever its class, unless
the pool sets ``disablePreemptCrossPoolJobsFirst`` (then it is an ordinary job of its class).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from armada.scheduling.config import SchedulingConfig
from armada.scheduling.context import CycleContext
from armada.scheduling.jobdb import RUNNING, JobDb
from armada.scheduling.pool_config import PoolConfig
from armada.scheduling.requirements import Toleration

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Suffix of the share a queue's away jobs hold in the pool they borrow from (as upstream).
AWAY_QUEUE_SUFFIX = "-away"


def away_passes(config: SchedulingConfig, pools: dict[str, IntArray]) -> list[tuple[PoolConfig, str]]:
    """``(home pool policy, away pool)`` for every away turn this cycle runs, in config order."""
    return [
        (home, away)
        for home in config.pools
        if not home.disable_away_scheduling
        for away in home.away_pool_names
        if away in pools
    ]


def away_keys(db: JobDb, config: SchedulingConfig, home: PoolConfig, away: str) -> BoolArray:
    """Keys that may be placed away in ``away`` for ``home``: allowed at home, of a class with
    ``awayNodeTypes``, and not a gang when the home pool sets ``disableGangAwayScheduling``.
    A job the away pool also takes had its home turn there first; it is away now because
    only the away node types' taints, tolerated away, let it in."""
    classes = config.priority_classes
    return np.array(
        [
            info.allows_pool(home.name)
            and bool(classes[info.priority_class].away_node_types)
            and not (info.gang_cardinality and home.disable_gang_away_scheduling)
            for info in db.keys.infos
        ],
        dtype=bool,
    )


def away_tolerations(db: JobDb, config: SchedulingConfig) -> list[tuple[Toleration, ...]]:
    """Per key: the tolerations it is given while away (its class's node types' taints)."""
    by_class = {name: config.away_tolerations(name) for name in config.priority_classes}
    return [by_class[info.priority_class] for info in db.keys.infos]


def cycle_use(ctx: CycleContext, local_node: IntArray, size: int, requests: IntArray) -> IntArray:
    """Resources per local node that this cycle's leases so far took (the db does not show them)."""
    used = np.zeros((size, requests.shape[1]), dtype=np.int64)
    keys = ctx.db.cols["key"]
    for rows, nodes in zip(ctx.lease_rows, ctx.lease_nodes, strict=True):
        local = local_node[nodes]
        on = local >= 0
        if on.any():
            np.add.at(used, local[on], requests[keys[rows[on]].astype(np.int64)])
    return used


def away_running(db: JobDb, pool: str, local_node: IntArray) -> IntArray:
    """Rows of running jobs on the pool's nodes (``local_node >= 0``) whose run belongs to
    another pool: away jobs borrowing here."""
    n = len(db.ids)
    cols = db.cols
    running = np.flatnonzero(cols["state"][:n] == RUNNING)
    on_pool = local_node[cols["node"][running]] >= 0
    rows = running[on_pool]
    home = db.pool_names.index(pool) if pool in db.pool_names else -2
    away: IntArray = rows[cols["pool"][rows] != home]
    return away


def in_pools_mask(size: int, pools: dict[str, IntArray], names: list[str]) -> BoolArray:
    """Per node row: in one of the pools ``names``."""
    mask = np.zeros(size, dtype=bool)
    rows = [pools[p] for p in names if p in pools]
    if rows:
        mask[np.concatenate(rows)] = True
    return mask


def fits_away(
    db: JobDb, config: SchedulingConfig, key: int, pools: dict[str, IntArray], fits: BoolArray
) -> bool:
    """Whether a node of an away pool of the key's pools could ever hold it (``fits``: node
    rows whose shape holds the request), tolerating the away node types: such a job is not
    rejected for fitting nowhere at home."""
    if not config.away_scheduling:
        return False
    info = db.keys.infos[key]
    if not config.priority_class(info.priority_class).away_node_types:
        return False
    homes = [h for h in config.pools if info.allows_pool(h.name) and not h.disable_away_scheduling]
    homes = [h for h in homes if not (info.gang_cardinality and h.disable_gang_away_scheduling)]
    reach = [a for h in homes for a in h.away_pool_names]
    if not reach:
        return False
    tolerations = info.tolerations + config.away_tolerations(info.priority_class)
    tolerations += tuple(t for h in homes for t in h.default_tolerations)
    constraints = db.nodes.constraint_mask(info.node_selector, tolerations, info.affinity)
    return bool((fits & in_pools_mask(len(fits), pools, reach) & constraints).any())
