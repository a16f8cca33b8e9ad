"""The scheduler's in-memory job database: columnar, incrementally updated.

The scheduler service applies the event log to a :class:`JobDb` (submitted, leased,
requeued, finished, reprioritized) and hands it to :func:`armada.scheduling.schedule` each
cycle. A job costs one row in a few numpy columns plus its id; queued jobs are kept in
per-queue orders that are re-sorted only when something changed, and the aggregates a
cycle needs (queued count per queue and scheduling key, allocation per node and per queue)
are maintained on every update instead of being recomputed.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from armada.scheduling.config import SchedulingConfig
from armada.scheduling.keys import KeyTable
from armada.scheduling.nodes import NodeDb
from armada.scheduling.penalties import ShortJobPenalties
from armada.scheduling.queueorder import QueueOrder
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.unique_rows import unique_rows

Rows = npt.NDArray[np.int64]

FREE, QUEUED, RUNNING = 0, 1, 2

_COLUMNS: dict[str, tuple[type[np.generic], object]] = {
    "queue": (np.int32, -1),
    "key": (np.int32, -1),
    "priority": (np.float64, 0.0),
    "submitted": (np.float64, 0.0),
    "seq": (np.int64, 0),
    "state": (np.int8, FREE),
    "node": (np.int64, -1),
    "gang": (np.int64, -1),
    "pool": (np.int32, -1),
    "run_seq": (np.int64, 0),
    #: when the job's current run started running (NaN: not known to have started)
    "started": (np.float64, np.nan),
}


@dataclass
class Gang:
    """Members (rows) of one gang; gang ids are scoped by queue."""

    gang_id: str
    queue: int
    #: scheduling key of the first member; members must share it to be schedulable
    key: int
    members: list[int] = field(default_factory=list)


class JobDb:
    """All jobs the scheduler knows about that are queued or running."""

    #: Removed jobs' rows are reclaimed once they outnumber live rows and this minimum.
    compact_min = 1 << 16

    def __init__(self, config: SchedulingConfig, nodes: NodeDb) -> None:
        self.config = config
        self.nodes = nodes
        self.resources = nodes.resources
        self.keys = KeyTable(config, self.resources)
        self.priority_class_names = list(config.priority_classes)
        self._pc_index = {name: i for i, name in enumerate(self.priority_class_names)}
        self.ids: list[str | None] = []
        self._row_of: dict[str, int] = {}
        self.cols: dict[str, npt.NDArray[Any]] = {
            name: np.zeros(0, dtype=dtype) for name, (dtype, _) in _COLUMNS.items()
        }
        self.queue_names: list[str] = []
        self._queue_index: dict[str, int] = {}
        self._orders: list[QueueOrder] = []
        #: queued job count per queue and scheduling key
        self.queued_counts: list[dict[int, int]] = []
        self.pool_names: list[str] = []
        self._pool_index: dict[str, int] = {}
        self.gangs: list[Gang | None] = []
        #: queued member count per gang index
        self.gang_queued: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        #: per gang index: members with differing scheduling keys (never schedulable)
        self.gang_mixed: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._gang_index: dict[tuple[int, str], int] = {}
        #: Node row -> rows of the jobs running there, kept up to date by one-job updates; ``None``
        #: after a batch of leases or ends (whose sets a simulation never reads), rebuilt on read.
        self._node_jobs: dict[int, set[int]] | None = {}
        self._node_alloc = np.zeros((0, len(self.priority_class_names), 0), dtype=np.int64)
        self._queue_alloc: dict[tuple[int, str], npt.NDArray[np.int64]] = {}
        self._seq = 0
        self._run_seq = 0
        self.penalties = ShortJobPenalties()
        #: Bumped by every change to a job: readers that derive from the db (forecasts) skip
        #: their work while it stands still.
        self.version = 0
        #: ``None``, or a list each compaction appends its renumbering to (``new_row[old]``,
        #: -1: removed): set by a reader that indexes arrays by row (a simulation), which
        #: takes them as it goes.
        self.renumbering: list[Rows] | None = None
        self._pc_of_key = np.zeros(0, dtype=np.int64)

    # -- lookups -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._row_of)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._row_of

    def row(self, job_id: str) -> int:
        return self._row_of[job_id]

    def state(self, job_id: str) -> int:
        return int(self.cols["state"][self._row_of[job_id]])

    def rows_of(self, job_ids: Sequence[str]) -> Rows:
        """The row of each of ``job_ids`` (-1: not in the db), in one pass."""
        get = self._row_of.get
        return np.fromiter(map(get, job_ids, itertools.repeat(-1)), dtype=np.int64, count=len(job_ids))

    def ids_of(self, rows: Rows) -> list[str]:
        """The ids of live ``rows`` (only removed rows have none)."""
        return cast(list[str], list(map(self.ids.__getitem__, rows.tolist())))

    def states_of(self, job_ids: Sequence[str]) -> npt.NDArray[np.int8]:
        """The state of each of ``job_ids`` (``FREE``: not in the db), in one pass."""
        rows = self.rows_of(job_ids)
        known = rows >= 0
        states = np.full(len(rows), FREE, dtype=np.int8)
        states[known] = self.cols["state"][rows[known]]
        return states

    def queue_of(self, job_id: str) -> str:
        return self.queue_names[int(self.cols["queue"][self._row_of[job_id]])]

    def node_of(self, job_id: str) -> str | None:
        node = int(self.cols["node"][self._row_of[job_id]])
        return self.nodes.ids[node] if node >= 0 else None

    def has_queue(self, name: str) -> bool:
        return name in self._queue_index

    def queue_index(self, name: str) -> int:
        index = self._queue_index.get(name)
        if index is None:
            index = self._queue_index[name] = len(self.queue_names)
            self.queue_names.append(name)
            self._orders.append(QueueOrder())
            self.queued_counts.append({})
        return index

    def pool_index(self, name: str) -> int:
        index = self._pool_index.get(name)
        if index is None:
            index = self._pool_index[name] = len(self.pool_names)
            self.pool_names.append(name)
        return index

    # -- updates -------------------------------------------------------------------------

    def add(self, job: JobRequirements) -> None:
        """A job was submitted (or requeued from the log): it is queued."""
        self.add_many((job,))

    def add_many(self, jobs: Iterable[JobRequirements]) -> None:
        """Queue many jobs at once (cheaper per job than :meth:`add`)."""
        self.version += 1
        default_pc = self.config.default_priority_class_name
        batch = list(jobs)
        keys = [self.keys.intern(job.key(default_pc)) for job in batch]  # validates before any change
        ids = {job.id for job in batch}
        # keys().isdisjoint iterates the batch; set.isdisjoint(dict) would iterate every known job
        if len(ids) < len(batch) or not self._row_of.keys().isdisjoint(ids):
            known = sorted(i for i in ids if i in self._row_of) or ["(duplicated in the batch)"]
            raise ValueError(f"job {known[0]} is already known")
        if len(self.ids) - len(self._row_of) > max(self.compact_min, len(self._row_of)):
            self._compact()
        start = len(self.ids)
        values: dict[str, list[Any]] = {
            name: [] for name in ("queue", "key", "priority", "submitted", "gang")
        }
        for job, key in zip(batch, keys, strict=True):
            row = self._row_of[job.id] = len(self.ids)
            self.ids.append(job.id)
            queue = self.queue_index(job.queue)
            values["queue"].append(queue)
            values["key"].append(key)
            values["priority"].append(job.priority)
            values["submitted"].append(job.submitted)
            values["gang"].append(self._join_gang(row, queue, job.gang_id, key) if job.gang_id else -1)
            counts = self.queued_counts[queue]
            counts[key] = counts.get(key, 0) + 1
            self._orders[queue].pending.append(row)
        end = len(self.ids)
        self._grow(end)
        for name, column in values.items():
            self.cols[name][start:end] = column
        self.cols["seq"][start:end] = np.arange(self._seq, self._seq + end - start)
        self._seq += end - start
        self.cols["state"][start:end] = QUEUED

    def lease(self, job_id: str, node_id: str, pool: str) -> None:
        """A queued job was leased to ``node_id``: it now holds resources there. One job at a
        time (the follower, event by event) costs ~20x less here than through :meth:`lease_many`."""
        self.version += 1
        row = self._row_of[job_id]
        cols = self.cols
        if cols["state"][row] != QUEUED:
            raise ValueError(f"job {job_id} is not queued")
        self._dequeue(row)
        node = self.nodes.ensure_row(node_id)
        cols["state"][row] = RUNNING
        cols["node"][row] = node
        cols["pool"][row] = self.pool_index(pool)
        cols["run_seq"][row] = self._run_seq
        cols["started"][row] = np.nan
        self._run_seq += 1
        if self._node_jobs is not None:
            self._node_jobs.setdefault(node, set()).add(row)
        self._account_one(row, +1)

    def lease_many(self, job_ids: Sequence[str], node_ids: Sequence[str], pools: Sequence[str]) -> None:
        """Many queued jobs leased at once (a cycle's leases): array updates, not one per job."""
        if not job_ids:
            return
        rows = np.fromiter(map(self._row_of.__getitem__, job_ids), dtype=np.int64, count=len(job_ids))
        self._check_leasable(rows)  # before reserving rows for nodes not reported yet
        node_row = {node_id: self.nodes.ensure_row(node_id) for node_id in set(node_ids)}
        nodes = np.fromiter(map(node_row.__getitem__, node_ids), dtype=np.int64, count=len(rows))
        self.lease_rows(rows, nodes, pools)

    def lease_rows(self, rows: Rows, nodes: Rows, pools: Sequence[str]) -> None:
        """:meth:`lease_many` given the jobs' rows and their nodes' rows (a cycle's leases as
        it read them)."""
        if not len(rows):
            return
        self._check_leasable(rows)
        self.version += 1
        cols = self.cols
        self._dequeue_many(rows)
        pool_row = {pool: self.pool_index(pool) for pool in set(pools)}
        cols["state"][rows] = RUNNING
        cols["node"][rows] = nodes
        if len(pool_row) == 1:
            cols["pool"][rows] = next(iter(pool_row.values()))
        else:
            cols["pool"][rows] = np.fromiter(map(pool_row.__getitem__, pools), np.int32, count=len(rows))
        cols["run_seq"][rows] = np.arange(self._run_seq, self._run_seq + len(rows))
        cols["started"][rows] = np.nan
        self._run_seq += len(rows)
        self._node_jobs = None
        self._account(rows, +1)

    def _check_leasable(self, rows: Rows) -> None:
        """Raise unless ``rows`` are distinct queued jobs."""
        state = self.cols["state"]
        if _repeats(rows, len(self.ids)) or (state[rows] != QUEUED).any():
            bad = [r for r in rows.tolist() if state[r] != QUEUED] or rows.tolist()
            raise ValueError(f"job {self.ids[bad[0]]} is not queued")

    def requeue(self, job_id: str) -> None:
        """A running job returns to its queue (lease returned or expired, preempted and retried)."""
        self.version += 1
        row = self._row_of[job_id]
        if self.cols["state"][row] != RUNNING:
            raise ValueError(f"job {job_id} is not running")
        self._release(row)
        queue = int(self.cols["queue"][row])
        self.cols["state"][row] = QUEUED
        counts = self.queued_counts[queue]
        key = int(self.cols["key"][row])
        counts[key] = counts.get(key, 0) + 1
        self._gang_delta(row, +1)
        order = self._orders[queue]
        order.pending.append(row)
        order.dirty = True

    def started(self, job_id: str, at: float) -> None:
        """The leased job's run started running at ``at`` (seconds, the cycles' epoch)."""
        row = self._row_of.get(job_id)
        if row is not None and self.cols["state"][row] == RUNNING:
            self.cols["started"][row] = at
            self.version += 1

    def remove(self, job_id: str, finished: float | None = None) -> None:
        """A job left the scheduler's view: finished, cancelled, rejected or preempted.

        ``finished`` (the time its run ended; not for preemptions) charges a run shorter than
        its pool's ``shortJobPenaltyCutoff`` to its queue until the cutoff (:mod:`.penalties`).
        """
        self.version += 1
        row = self._row_of.pop(job_id)
        state = self.cols["state"][row]
        if finished is not None and state == RUNNING:
            self._charge_short_run(row, finished)
        if state == QUEUED:
            self._dequeue(row)
        elif state == RUNNING:
            self._release(row)
        if self.cols["gang"][row] >= 0:
            self._leave_gang(row)
        self.cols["state"][row] = FREE
        self.ids[row] = None

    def remove_many(self, job_ids: Iterable[str]) -> None:
        """Many jobs leave at once (a cycle's preemptions), as :meth:`remove` without
        ``finished``: array updates, not one per job."""
        self.remove_rows(np.fromiter(map(self._row_of.__getitem__, job_ids), dtype=np.int64))

    def remove_rows(self, rows: Rows) -> None:
        """:meth:`remove_many` given the jobs' (distinct) rows (a simulation's ends)."""
        if not len(rows):
            return
        self.version += 1
        cols = self.cols
        state = cols["state"][rows]
        queued, running = rows[state == QUEUED], rows[state == RUNNING]
        if len(queued):
            self._dequeue_many(queued)
        if len(running):
            self._release_many(running)
        for row in rows[cols["gang"][rows] >= 0].tolist():
            self._leave_gang(row)
        cols["state"][rows] = FREE
        row_of, ids = self._row_of, self.ids
        for row in rows.tolist():
            del row_of[ids[row]]  # live rows have ids
            ids[row] = None

    def _leave_gang(self, row: int) -> None:
        gang = int(self.cols["gang"][row])
        info = self.gangs[gang]
        assert info is not None
        info.members.remove(row)
        if not info.members:
            self.gangs[gang] = None
            del self._gang_index[(info.queue, info.gang_id)]
        else:
            # Members replaced one by one (a retry that mutates the whole gang) leave the
            # gang mixed only while old and new specs are both present.
            keys = self.cols["key"][info.members]
            info.key = int(keys[0])
            self.gang_mixed[gang] = bool((keys != info.key).any())

    def _charge_short_run(self, row: int, finished: float) -> None:
        pool = self.pool_names[int(self.cols["pool"][row])]
        cutoff = self.config.pool_config(pool).short_job_penalty_seconds
        started = float(self.cols["started"][row])
        if cutoff > 0 and finished - started < cutoff:  # False for NaN: never seen running
            request = self.keys.request(int(self.cols["key"][row]))
            self.penalties.charge(int(self.cols["queue"][row]), pool, request, started + cutoff)

    def reprioritize(self, job_id: str, priority: float) -> None:
        """Change a job's priority; a queued job moves within its queue next cycle."""
        self.version += 1
        row = self._row_of[job_id]
        self.cols["priority"][row] = priority
        if self.cols["state"][row] == QUEUED:
            self._orders[int(self.cols["queue"][row])].dirty = True

    # -- what a cycle reads --------------------------------------------------------------

    def queued_rows(self, queue: int) -> Rows:
        """Queued rows of ``queue`` in queue order (higher class priority, lower priority, older)."""
        state = self.cols["state"]
        return self._orders[queue].read(lambda rows: state[rows] == QUEUED, self._sorted, self._sort_key)

    def node_allocation(self) -> npt.NDArray[np.int64]:
        """``nodes x priority classes x R`` units held by running jobs."""
        self._grow_nodes()
        return self._node_alloc[: self.nodes.size]

    def queue_allocation(self, queue: int, pool: str) -> npt.NDArray[np.int64]:
        """``priority classes x R`` units running for ``queue`` in ``pool``."""
        alloc = self._queue_alloc.get((queue, pool))
        width = len(self.resources)
        if alloc is None:
            return np.zeros((len(self.priority_class_names), width), dtype=np.int64)
        if alloc.shape[1] < width:
            alloc = self._queue_alloc[(queue, pool)] = np.pad(alloc, ((0, 0), (0, width - alloc.shape[1])))
        return alloc

    def jobs_on_node(self, node: int) -> set[int]:
        if self._node_jobs is None:
            self._node_jobs = self._running_by_node()
        return self._node_jobs.get(node, set())

    def _running_by_node(self) -> dict[int, set[int]]:
        """Node row -> rows of the jobs running there, from the columns."""
        n = len(self.ids)
        running = np.flatnonzero(self.cols["state"][:n] == RUNNING)
        nodes = self.cols["node"][running]
        order = np.argsort(nodes, kind="stable")
        nodes, running = nodes[order], running[order]
        cuts = np.flatnonzero(nodes[1:] != nodes[:-1]) + 1
        firsts = nodes[np.concatenate([[0], cuts])].tolist() if len(nodes) else []
        return {node: set(rows.tolist()) for node, rows in zip(firsts, np.split(running, cuts), strict=True)}

    def running_rows(self, queue: int, pool: str) -> Rows:
        """Running rows of ``queue`` in ``pool`` (a scan; only used for fair-share eviction)."""
        n = len(self.ids)
        pool_index = self._pool_index.get(pool, -2)
        mask = (self.cols["state"][:n] == RUNNING) & (self.cols["queue"][:n] == queue)
        mask &= self.cols["pool"][:n] == pool_index
        return np.flatnonzero(mask)

    def gang_of(self, row: int) -> int:
        """Gang index of ``row``, -1 outside any gang."""
        return int(self.cols["gang"][row])

    def pc_index(self, key: int) -> int:
        return self._pc_index[self.keys.infos[key].priority_class]

    def copy(self) -> JobDb:
        """An independent copy to simulate on (forecasts), much cheaper than ``deepcopy``:
        columns and indexes are copied, immutable job ids shared; nodes and keys are deep-copied
        together, so that they share one copy of the resource index, but their immutable node
        specs and the configuration are shared."""
        clone = copy.copy(self)
        shared: dict[int, Any] = {id(spec): spec for spec in self.nodes.specs}
        shared[id(self.config)] = self.config
        clone.nodes, clone.keys = copy.deepcopy((self.nodes, self.keys), shared)
        clone.resources = clone.nodes.resources
        clone.ids, clone._row_of = list(self.ids), dict(self._row_of)
        clone.cols = {name: column.copy() for name, column in self.cols.items()}
        clone.queue_names, clone._queue_index = list(self.queue_names), dict(self._queue_index)
        clone._orders = [replace(o, rows=o.rows.copy(), pending=list(o.pending)) for o in self._orders]
        clone.queued_counts = [dict(counts) for counts in self.queued_counts]
        clone.pool_names, clone._pool_index = list(self.pool_names), dict(self._pool_index)
        clone.gangs = [None if g is None else replace(g, members=list(g.members)) for g in self.gangs]
        clone.gang_queued, clone.gang_mixed = self.gang_queued.copy(), self.gang_mixed.copy()
        clone._gang_index = dict(self._gang_index)
        clone._node_jobs = None  # rebuilt if read
        clone._node_alloc = self._node_alloc.copy()
        clone._queue_alloc = {key: alloc.copy() for key, alloc in self._queue_alloc.items()}
        clone.penalties = self.penalties.copy()
        clone.renumbering = None
        return clone

    # -- internals -----------------------------------------------------------------------

    def _compact(self) -> None:
        """Drop the rows of removed jobs and empty gangs, so a long-lived db stays its live size."""
        n = len(self.ids)
        live = np.flatnonzero(self.cols["state"][:n] != FREE)
        new_row = np.full(n, -1, dtype=np.int64)
        new_row[live] = np.arange(len(live))
        kept = [i for i, g in enumerate(self.gangs) if g is not None]
        new_gang = np.full(len(self.gangs) + 1, -1, dtype=np.int64)  # the extra -1 maps "no gang" to itself
        new_gang[kept] = np.arange(len(kept))
        self.cols = {name: column[live] for name, column in self.cols.items()}
        self.cols["gang"] = new_gang[self.cols["gang"]]
        self.ids = [self.ids[r] for r in live.tolist()]
        self._row_of = {job_id: row for row, job_id in enumerate(self.ids) if job_id is not None}
        for order in self._orders:
            order.remap(new_row)
        self.gangs = [self.gangs[i] for i in kept]
        for gang in self.gangs:
            assert gang is not None
            gang.members = new_row[gang.members].tolist()
        self.gang_queued = self.gang_queued[kept]
        self.gang_mixed = self.gang_mixed[kept]
        self._gang_index = {(g.queue, g.gang_id): i for i, g in enumerate(self.gangs) if g is not None}
        self._node_jobs = None  # rebuilt if read
        if self.renumbering is not None:
            self.renumbering.append(new_row)

    def _grow(self, size: int) -> None:
        capacity = len(self.cols["state"])
        if size <= capacity:
            return
        capacity = max(1024, 2 * capacity, size)
        for name, (dtype, fill) in _COLUMNS.items():
            old = self.cols[name]
            new = np.full(capacity, fill, dtype=dtype)
            new[: len(old)] = old
            self.cols[name] = new

    def _grow_nodes(self) -> None:
        shape = self._node_alloc.shape
        width = len(self.resources)
        if shape[0] < self.nodes.size or shape[2] < width:
            new = np.zeros((max(self.nodes.size, 2 * shape[0]), shape[1], width), dtype=np.int64)
            new[: shape[0], :, : shape[2]] = self._node_alloc
            self._node_alloc = new

    def _join_gang(self, row: int, queue: int, gang_id: str, key: int) -> int:
        index = self._gang_index.get((queue, gang_id))
        if index is None:
            index = self._gang_index[(queue, gang_id)] = len(self.gangs)
            self.gangs.append(Gang(gang_id, queue, key))
            if index >= len(self.gang_queued):
                more = max(64, index)
                self.gang_queued = np.concatenate([self.gang_queued, np.zeros(more, dtype=np.int64)])
                self.gang_mixed = np.concatenate([self.gang_mixed, np.zeros(more, dtype=bool)])
        gang = self.gangs[index]
        assert gang is not None
        gang.members.append(row)
        self.gang_mixed[index] |= key != gang.key
        self.gang_queued[index] += 1
        return index

    def _gang_delta(self, row: int, delta: int) -> None:
        gang = self.gang_of(row)
        if gang >= 0:
            self.gang_queued[gang] += delta

    def _dequeue(self, row: int) -> None:
        queue = int(self.cols["queue"][row])
        key = int(self.cols["key"][row])
        counts = self.queued_counts[queue]
        counts[key] -= 1
        if not counts[key]:
            del counts[key]
        self._gang_delta(row, -1)
        self._orders[queue].stale += 1

    def _dequeue_many(self, rows: Rows) -> None:
        cols = self.cols
        pairs, _, counted = unique_rows(np.stack([cols["queue"][rows], cols["key"][rows]], axis=1))
        for (queue, key), n in zip(pairs.tolist(), counted.tolist(), strict=True):
            counts = self.queued_counts[queue]
            counts[key] -= n
            if not counts[key]:
                del counts[key]
            self._orders[queue].stale += n
        gangs = cols["gang"][rows]
        np.subtract.at(self.gang_queued, gangs[gangs >= 0], 1)

    def _account(self, rows: Rows, sign: int) -> None:
        """Add (``sign`` +1) or take away (-1) ``rows``' requests on their nodes and queues."""
        cols = self.cols
        keys = cols["key"][rows]
        requests = self.keys.requests()
        width = requests.shape[1]
        self._grow_nodes()
        pcs = self._key_pcs()[keys]
        signed = np.take(requests, keys, axis=0) * sign  # ``requests[keys]``, much faster
        np.add.at(self._node_alloc[:, :, :width], (cols["node"][rows], pcs), signed)
        groups, inverse, _ = unique_rows(np.stack([cols["queue"][rows], cols["pool"][rows], pcs], axis=1))
        sums = np.zeros((len(groups), width), dtype=np.int64)
        np.add.at(sums, inverse, signed)
        for (queue, pool_index, pc), total in zip(groups.tolist(), sums, strict=True):
            pool = self.pool_names[pool_index]
            alloc = self.queue_allocation(queue, pool)
            alloc[pc, :width] += total
            self._queue_alloc[(queue, pool)] = alloc

    def _key_pcs(self) -> npt.NDArray[np.int64]:
        """Priority class index per scheduling key (cached until keys are added)."""
        if len(self._pc_of_key) < len(self.keys):
            self._pc_of_key = np.array([self.pc_index(k) for k in range(len(self.keys))], dtype=np.int64)
        return self._pc_of_key

    def _account_one(self, row: int, sign: int) -> None:
        """:meth:`_account` for one row, without its array set-up."""
        key = int(self.cols["key"][row])
        request = self.keys.requests()[key] * sign
        pc = int(self._key_pcs()[key])
        self._grow_nodes()
        self._node_alloc[int(self.cols["node"][row]), pc, : len(request)] += request
        pool = self.pool_names[int(self.cols["pool"][row])]
        alloc = self.queue_allocation(int(self.cols["queue"][row]), pool)
        alloc[pc, : len(request)] += request
        self._queue_alloc[(int(self.cols["queue"][row]), pool)] = alloc

    def _release(self, row: int) -> None:
        self._account_one(row, -1)
        if self._node_jobs is not None:
            self._node_jobs[int(self.cols["node"][row])].discard(row)
        self.cols["node"][row] = -1
        self.cols["pool"][row] = -1

    def _release_many(self, rows: Rows) -> None:
        self._account(rows, -1)
        self._node_jobs = None
        self.cols["node"][rows] = -1
        self.cols["pool"][rows] = -1

    def _sorted(self, rows: Rows) -> Rows:
        cols = self.cols
        class_priority = self.keys.priorities()[cols["key"][rows]]
        order: Rows = np.lexsort(
            (cols["seq"][rows], cols["submitted"][rows], cols["priority"][rows], -class_priority)
        )
        return order

    def _sort_key(self, row: int) -> tuple[float, ...]:
        cols = self.cols
        return (
            -int(self.keys.priorities()[int(cols["key"][row])]),
            float(cols["priority"][row]),
            float(cols["submitted"][row]),
            int(cols["seq"][row]),
        )


def _repeats(rows: Rows, size: int) -> bool:
    """Whether ``rows`` (each below ``size``) holds some row twice: a sort for a few rows, a
    mask over every row for many (a sort of a 30,000-job cycle's leases costs ~5 ms)."""
    if len(rows) * 32 < size:
        return len(np.unique(rows)) < len(rows)
    seen = np.zeros(size, dtype=bool)
    seen[rows] = True
    return int(np.count_nonzero(seen)) < len(rows)
