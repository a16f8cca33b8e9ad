"""Nodes as the scheduler sees them, held as dense arrays that update in place.

Executors report nodes every few seconds; :class:`NodeDb` keeps one stable row per node id
and rewrites only changed rows, so a cycle never rebuilds the node matrix. Labels are
interned per label key into integer code columns and taints into a boolean matrix, which
makes node selectors, tolerations and required affinity a handful of vectorised compares.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Collection, Mapping
from typing import NamedTuple, TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from armada.model.resources import PODS, ResourceIndex
from armada.model.taints import Taint
from armada.scheduling.requirements import (
    JobRequirements,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Toleration,
)
from armada.scheduling.unique_rows import unique_rows

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
#: The ``pods`` capacity of a node that reports none (process and fake backends): no limit,
#: yet small enough that summing it over a million nodes cannot overflow int64.
UNLIMITED_PODS = 2**31 - 1


class NodeSpec(msgspec.Struct, frozen=True, rename="camel"):
    """One node as reported by its executor."""

    id: str
    pool: str = "default"
    executor: str = ""
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    #: Allocatable resources in integer units.
    allocatable: dict[str, int] = msgspec.field(default_factory=dict)
    #: Resources held by pods Armada did not place (daemonsets, system pods).
    non_armada_allocated: dict[str, int] = msgspec.field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True

    def __deepcopy__(self, memo: dict[int, object]) -> NodeSpec:
        """Itself: a reported node is never changed in place (a new report replaces it), so a
        copy of the node table to simulate on (forecasts) shares the specs rather than
        copying every node's labels on the event loop."""
        return self


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """Kubernetes toleration matching for one taint."""
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists" and (not t.key or t.key == taint.key):
            return True
        if t.operator == "Equal" and t.key == taint.key and t.value == taint.value:
            return True
    return False


_A = TypeVar("_A", bound=np.generic)


def _resized(a: npt.NDArray[_A], rows: int, fill: object, cols: int | None = None) -> npt.NDArray[_A]:
    """Copy of ``a`` with ``rows`` rows (and ``cols`` columns for matrices), new cells ``fill``."""
    shape: tuple[int, ...] = (rows,) if a.ndim == 1 else (rows, a.shape[1] if cols is None else cols)
    out = np.full(shape, fill, dtype=a.dtype)
    if a.ndim == 1:
        out[: len(a)] = a
    else:
        out[: a.shape[0], : a.shape[1]] = a
    return out


class LiveShapes(NamedTuple):
    """The live nodes' shapes (:meth:`NodeDb.shapes`) and the distinct ones among them."""

    #: Per row (live or not), its shape.
    shape: IntArray
    #: The live rows, pool after pool (as :meth:`NodeDb.pool_rows`).
    live: IntArray
    #: The distinct shapes of the live rows, and each live row's index among them.
    distinct: IntArray
    inverse: IntArray


class NodeDb:
    """All known nodes, one stable row each, with in-place updated arrays."""

    def __init__(self, resources: ResourceIndex) -> None:
        self.resources = resources
        # The pods column exists before any row is written, so no row is ever padded to 0 pods.
        self._pods = resources.column(PODS)
        self.version = 0
        self.specs: list[NodeSpec | None] = []
        self.ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._capacity = 0
        self._allocatable = np.zeros((0, 0), dtype=np.int64)
        self._non_armada = np.zeros((0, 0), dtype=np.int64)
        self.schedulable: BoolArray = np.zeros(0, dtype=bool)
        self.alive: BoolArray = np.zeros(0, dtype=bool)
        #: Rows whose node reports no ``pods`` capacity (their column holds ``UNLIMITED_PODS``).
        self.unlimited_pods: BoolArray = np.zeros(0, dtype=bool)
        self._labels: dict[str, IntArray] = {}
        self._label_numbers: dict[str, npt.NDArray[np.float64]] = {}
        self._label_codes: dict[str, dict[str, int]] = {}
        self._taints: dict[Taint, int] = {}
        self._taint_matrix: BoolArray = np.zeros((0, 0), dtype=bool)
        self._pool_rows: dict[str, IntArray] | None = None
        self._mask_cache: dict[object, BoolArray] = {}
        self._live_shapes: tuple[int, int, Mapping[str, Mapping[str, int]], LiveShapes] | None = None

    # -- updates -------------------------------------------------------------------------

    def row(self, node_id: str) -> int | None:
        return self._rows.get(node_id)

    def ensure_row(self, node_id: str) -> int:
        """Row of ``node_id``, reserving a not-yet-live row for a node not reported yet."""
        row = self._rows.get(node_id)
        if row is None:
            row = self._rows[node_id] = len(self.specs)
            self.specs.append(None)
            self.ids.append(node_id)
            self._grow(row + 1)
        return row

    def upsert(self, node: NodeSpec) -> None:
        """Add or replace a node; identical re-reports cost a dict lookup and compare."""
        row = self._rows.get(node.id)
        if row is not None and self.specs[row] == node:
            return
        if row is None:
            row = self.ensure_row(node.id)
        old = self.specs[row]
        self.specs[row] = node
        # Only membership and label/taint changes invalidate the derived indexes; usage
        # changes (the common re-report) just rewrite the row.
        self._touch(
            membership=old is None or old.pool != node.pool,
            constraints=old is None or old.labels != node.labels or old.taints != node.taints,
        )
        self._write(row, node)

    def remove(self, node_id: str) -> None:
        """Forget a node; its row stays reserved so job references remain valid."""
        row = self._rows.get(node_id)
        if row is None or self.specs[row] is None:
            return
        self.specs[row] = None
        self.alive[row] = self.schedulable[row] = False
        self._touch(membership=True, constraints=True)

    def _touch(self, *, membership: bool, constraints: bool) -> None:
        self.version += 1
        if membership:
            self._pool_rows = None
        if membership or constraints:
            self._mask_cache.clear()

    def _grow(self, size: int) -> None:
        if size <= self._capacity:
            return
        cap = max(16, 2 * self._capacity, size)
        self._allocatable = _resized(self._allocatable, cap, 0)
        self._non_armada = _resized(self._non_armada, cap, 0)
        self.schedulable = _resized(self.schedulable, cap, False)
        self.alive = _resized(self.alive, cap, False)
        self.unlimited_pods = _resized(self.unlimited_pods, cap, False)
        self._taint_matrix = _resized(self._taint_matrix, cap, False)
        self._labels = {k: _resized(v, cap, -1) for k, v in self._labels.items()}
        self._label_numbers = {k: _resized(v, cap, np.nan) for k, v in self._label_numbers.items()}
        self._capacity = cap

    def _ensure_width(self) -> None:
        width = len(self.resources)
        if self._allocatable.shape[1] < width:
            self._allocatable = _resized(self._allocatable, self._capacity, 0, width)
            self._non_armada = _resized(self._non_armada, self._capacity, 0, width)

    def _write(self, row: int, node: NodeSpec) -> None:
        self.alive[row] = True
        self.schedulable[row] = node.ready and not node.unschedulable
        allocatable = self.resources.vector(node.allocatable)
        non_armada = self.resources.vector(node.non_armada_allocated)
        self._ensure_width()
        self._allocatable[row] = self.resources.pad(allocatable)
        self.unlimited_pods[row] = PODS not in node.allocatable
        if self.unlimited_pods[row]:
            self._allocatable[row, self._pods] = UNLIMITED_PODS
        self._non_armada[row] = self.resources.pad(non_armada)
        for column in self._labels.values():
            column[row] = -1
        for numbers in self._label_numbers.values():
            numbers[row] = np.nan
        for key, value in node.labels.items():
            self._set_label(row, key, value)
        self._taint_matrix[row] = False
        for taint in node.taints:
            if taint.effect in _BLOCKING_EFFECTS:
                taint_column = self._taint_column(taint)  # may widen the matrix: index after
                self._taint_matrix[row, taint_column] = True

    def _set_label(self, row: int, key: str, value: str) -> None:
        if key not in self._labels:
            self._labels[key] = np.full(self._capacity, -1, dtype=np.int64)
            self._label_numbers[key] = np.full(self._capacity, np.nan)
            self._label_codes[key] = {}
        codes = self._label_codes[key]
        self._labels[key][row] = codes.setdefault(value, len(codes))
        with contextlib.suppress(ValueError):
            self._label_numbers[key][row] = int(value)

    def _taint_column(self, taint: Taint) -> int:
        column = self._taints.get(taint)
        if column is None:
            column = self._taints[taint] = len(self._taints)
            self._taint_matrix = _resized(self._taint_matrix, self._capacity, False, column + 1)
        return column

    # -- reads ---------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Number of rows (including removed nodes); arrays below have this length."""
        return len(self.specs)

    def allocatable(self) -> IntArray:
        """``size`` x R allocatable units (removed nodes keep stale rows; mask with ``alive``).

        A node reporting no ``pods`` capacity has ``UNLIMITED_PODS`` there: see ``reported``.
        """
        self._ensure_width()
        return self._allocatable[: self.size]

    def reported(self, matrix: IntArray) -> IntArray:
        """``matrix`` (rows as in ``allocatable``) with the unlimited ``pods`` cells zeroed, for
        figures shown to people (capacity metrics), where no limit must not read as 2^31 pods."""
        shown = matrix.copy()
        shown[self.unlimited_pods[: len(shown)], self._pods] = 0
        return shown

    def non_armada(self) -> IntArray:
        self._ensure_width()
        return self._non_armada[: self.size]

    def executor_mask(self, executors: Collection[str]) -> BoolArray:
        """Per row: whether the node belongs to one of ``executors``."""
        wanted = set(executors)
        return np.array([spec is not None and spec.executor in wanted for spec in self.specs], dtype=bool)

    def pool_rows(self) -> dict[str, IntArray]:
        """Rows of live nodes per pool, ordered by node id (the deterministic tie-break)."""
        if self._pool_rows is None:
            by_pool: dict[str, list[tuple[str, int]]] = {}
            for row, spec in enumerate(self.specs):
                if spec is not None:
                    by_pool.setdefault(spec.pool, []).append((spec.id, row))
            self._pool_rows = {
                pool: np.array([row for _, row in sorted(pairs)], dtype=np.int64)
                for pool, pairs in sorted(by_pool.items())
            }
        return self._pool_rows

    def could_hold(
        self,
        job: JobRequirements,
        pool_tolerations: Mapping[str, tuple[Toleration, ...]] | None = None,
        floating: Mapping[str, Mapping[str, int]] | None = None,
    ) -> bool:
        """Whether some live node could ever hold ``job``: its shape (:meth:`shapes`) fits the
        requests and its labels and taints admit the job (:meth:`admitting`): the test the
        cycle rejects jobs by, for one job; upstream's submit check."""
        return bool(self.holding(job, pool_tolerations, floating).any())

    def holding(
        self,
        job: JobRequirements,
        pool_tolerations: Mapping[str, tuple[Toleration, ...]] | None = None,
        floating: Mapping[str, Mapping[str, int]] | None = None,
    ) -> BoolArray:
        """Per row: whether the node could ever hold ``job`` (see :meth:`could_hold`)."""
        request = self.resources.vector(job.requests)
        shape = self.shapes(floating or {})
        selector = tuple(sorted(job.node_selector.items()))
        mask = self.admitting(selector, job.tolerations, job.affinity, pool_tolerations or {}, cache=False)
        mask = mask & (shape >= request).all(axis=1)
        if job.pools:
            in_pools = [spec is not None and spec.pool in job.pools for spec in self.specs]
            mask &= np.array(in_pools, dtype=bool)
        return mask

    def shapes(self, floating: Mapping[str, Mapping[str, int]]) -> IntArray:
        """Per row, allocatable less non-Armada use (ignoring current use); a floating resource
        counts as what the node's pool has of it (``floating``: pool -> resource -> units)."""
        shape = self.allocatable() - self.non_armada()
        rows = self.pool_rows()
        for pool, quantities in floating.items():
            for resource, units in quantities.items():
                if resource in self.resources and pool in rows:
                    shape[rows[pool], self.resources.column(resource)] = units
        return shape

    def live_shapes(self, floating: Mapping[str, Mapping[str, int]]) -> LiveShapes:
        """:meth:`shapes` and the distinct shapes of the live nodes, kept until a node changes
        or a resource is first named (a cycle asks every time; a simulation's nodes stay
        put). Not to be changed."""
        cached = self._live_shapes
        key = (self.version, len(self.resources))
        if cached is not None and cached[:2] == key and cached[2] == floating:
            return cached[3]
        shape = self.shapes(floating)
        rows = list(self.pool_rows().values())
        live = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        distinct, inverse, _ = unique_rows(shape[live])
        found = LiveShapes(shape, live, distinct, inverse)
        self._live_shapes = (*key, floating, found)
        return found

    def admitting(
        self,
        selector: tuple[tuple[str, str], ...],
        tolerations: tuple[Toleration, ...],
        affinity: tuple[NodeSelectorTerm, ...],
        pool_tolerations: Mapping[str, tuple[Toleration, ...]],
        *,
        cache: bool = True,
    ) -> BoolArray:
        """:meth:`constraint_mask`, the nodes of each pool in ``pool_tolerations`` also
        tolerating what that pool's jobs are given (``jobDefaults.tolerations``)."""
        mask = self.constraint_mask(selector, tolerations, affinity, cache=cache)
        rows = self.pool_rows()
        for pool, extra in pool_tolerations.items():
            if pool in rows and extra:
                in_pool = np.zeros(self.size, dtype=bool)
                in_pool[rows[pool]] = True
                wider = self.constraint_mask(selector, tolerations + extra, affinity, cache=cache)
                mask = mask | (wider & in_pool)
        return mask

    def label_values(self, key: str) -> tuple[IntArray, list[str]]:
        """Per-row code of label ``key`` (-1 = absent) and the values by code."""
        codes = self._label_codes.get(key, {})
        column = self._labels.get(key)
        values = list(codes)
        if column is None:
            return np.full(self.size, -1, dtype=np.int64), values
        return column[: self.size], values

    def constraint_mask(
        self,
        selector: tuple[tuple[str, str], ...],
        tolerations: tuple[Toleration, ...],
        affinity: tuple[NodeSelectorTerm, ...],
        *,
        cache: bool = True,
    ) -> BoolArray:
        """Rows whose labels and taints admit a job with these constraints (cached per version,
        unless ``cache`` is off: for one-off questions that must not grow the cache)."""
        cache_key = (selector, tolerations, affinity)
        mask = self._mask_cache.get(cache_key)
        if mask is None:
            mask = self.alive[: self.size].copy()
            for key, value in selector:
                mask &= self.label_equals(key, value)
            blocking = [col for taint, col in self._taints.items() if not tolerates(tolerations, taint)]
            if blocking:
                mask &= ~self._taint_matrix[: self.size][:, blocking].any(axis=1)
            if affinity:
                mask &= functools.reduce(operator.or_, (self._term(term) for term in affinity))
            if cache:
                self._mask_cache[cache_key] = mask
        return mask

    def label_equals(self, key: str, value: str) -> BoolArray:
        """Per row: whether the node's label ``key`` is ``value``."""
        code = self._label_codes.get(key, {}).get(value)
        if code is None:
            return np.zeros(self.size, dtype=bool)
        equal: BoolArray = self._labels[key][: self.size] == code
        return equal

    def _term(self, term: NodeSelectorTerm) -> BoolArray:
        if not term.match_expressions:
            return np.zeros(self.size, dtype=bool)  # Kubernetes: an empty term matches nothing
        result: BoolArray = functools.reduce(
            operator.and_, (self._expression(e) for e in term.match_expressions)
        )
        return result

    def _expression(self, e: NodeSelectorRequirement) -> BoolArray:
        codes, _ = self.label_values(e.key)
        known = self._label_codes.get(e.key, {})
        if e.operator in ("In", "NotIn"):
            hit = np.isin(codes, [known[v] for v in e.values if v in known])
            return hit if e.operator == "In" else ~hit
        if e.operator == "Exists":
            return codes >= 0
        if e.operator == "DoesNotExist":
            return codes < 0
        numbers = self._label_numbers.get(e.key)
        try:
            bound = int(e.values[0])
        except (IndexError, ValueError):
            return np.zeros(self.size, dtype=bool)
        if numbers is None:
            return np.zeros(self.size, dtype=bool)
        with np.errstate(invalid="ignore"):
            return numbers[: self.size] > bound if e.operator == "Gt" else numbers[: self.size] < bound
