"""Vectorised node placement: best fit for runs of identical jobs and uniform gangs.

Placing one job at a time on the node with the least leftover of the job's dominant
resource keeps filling that node until it is full (its leftover only shrinks), then moves to
the next best. So a run of ``k`` identical jobs is placed exactly like ``k`` sequential
best-fit placements by one sort and one cumulative sum: nodes in order of
``(free dominant resource, node id)``, each taking ``floor(min_r free / request)`` jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from armada.model.quantities import format_units

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def dominant_columns(requests: IntArray, scale: npt.NDArray[np.float64]) -> IntArray:
    """Per request (row): the column where it is largest relative to the pool (first on ties)."""
    if not requests.shape[-1]:
        return np.zeros(requests.shape[:-1], dtype=np.int64)
    columns: IntArray = np.argmax(requests * np.where(scale > 0, scale, 1e-30), axis=-1)
    return columns


def fit_counts(free: IntArray, request: IntArray, mask: BoolArray, cap: int) -> IntArray:
    """How many copies of ``request`` fit on each node (0 off ``mask``), at most ``cap``."""
    positive = request > 0
    if not positive.any():
        return np.where(mask, cap, 0).astype(np.int64)
    columns = np.flatnonzero(positive).tolist()
    counts = _all_columns(np.floor_divide, [free[:, c] for c in columns], request[columns].tolist())
    np.clip(counts, 0, cap, out=counts)
    counts[~mask] = 0
    return counts


@dataclass(frozen=True, slots=True)
class Placement:
    """Nodes (local indices) for consecutive jobs, in placement order."""

    nodes: IntArray

    def __len__(self) -> int:
        return len(self.nodes)


def place_identical(
    free: IntArray, request: IntArray, mask: BoolArray, count: int, dominant: int
) -> Placement:
    """Best-fit placement of up to ``count`` identical jobs (fewer if they do not all fit)."""
    if count <= 0:
        return Placement(np.zeros(0, dtype=np.int64))
    positive = request > 0
    if not positive[dominant]:  # nothing requested: every node of the mask holds any number
        fits = fit_counts(free, request, mask, count)
        candidates = np.flatnonzero(fits)
        fits = fits[candidates]
    else:  # only nodes with room in one column can hold a job: look at those
        candidates = np.flatnonzero(mask & (free[:, dominant] >= request[dominant]))
        # Column by column: gathering the candidates' rows of ``free`` is several times slower.
        room = [free[candidates, c] for c in np.flatnonzero(positive).tolist()]
        wanted = request[positive].tolist()
        if count == 1:  # the best node that fits: least room, then first (in node order)
            candidates = candidates[_all_columns(np.greater_equal, room, wanted)]
            if not len(candidates):
                return Placement(np.zeros(0, dtype=np.int64))
            return Placement(candidates[np.argmin(free[candidates, dominant])][None])
        fits = _all_columns(np.floor_divide, room, wanted)
        candidates, fits = candidates[fits > 0], fits[fits > 0]
    if not len(candidates):
        return Placement(np.zeros(0, dtype=np.int64))
    by_room = np.lexsort((candidates, free[candidates, dominant]))
    order = candidates[by_room]
    per_node = np.minimum(fits[by_room], count)
    before = np.cumsum(per_node) - per_node
    take = np.clip(count - before, 0, per_node)
    return Placement(np.repeat(order, take))


def _all_columns(op: np.ufunc, columns: list[IntArray], values: list[int]) -> IntArray:
    """``op(columns[c], values[c])`` combined over the columns by ``min`` (``all`` for booleans)."""
    out: IntArray = op(columns[0], values[0])
    for column, value in zip(columns[1:], values[1:], strict=True):
        np.minimum(out, op(column, value), out=out)
    return out


def place_uniform_gang(
    free: IntArray,
    *,
    request: IntArray,
    mask: BoolArray,
    count: int,
    dominant: int,
    label_codes: IntArray,
    label_values: list[str],
) -> Placement | None:
    """Place ``count`` identical gang members on nodes sharing one label value.

    Every value is tried (in value order); the one leaving the least of the dominant resource
    free on its nodes wins, so gangs pack onto the tightest island that holds them.
    """
    best: tuple[int, str, Placement] | None = None
    present = np.unique(label_codes[mask & (label_codes >= 0)])
    for code in sorted(present.tolist(), key=lambda c: label_values[c]):
        on_value = mask & (label_codes == code)
        placement = place_identical(free, request, on_value, count, dominant)
        if len(placement) < count:
            continue
        leftover = int(free[on_value, dominant].sum()) - count * int(request[dominant])
        if best is None or (leftover, label_values[code]) < best[:2]:
            best = (leftover, label_values[code], placement)
    return None if best is None else best[2]


def explain_misfit(
    free: IntArray,
    *,
    request: IntArray,
    mask: BoolArray,
    names: list[str],
    pool: str,
    constraints: str,
) -> str:
    """Concrete reason no node in ``pool`` can take ``request`` right now."""
    matching = int(mask.sum())
    if not matching:
        return f"no schedulable node in pool {pool} matches the job's node selector, tolerations and affinity"
    columns = [c for c in np.flatnonzero(request > 0).tolist()]
    if not columns:
        return f"no capacity left in pool {pool}"
    enough = [int((mask & (free[:, c] >= request[c])).sum()) for c in columns]
    column = columns[int(np.argmin(enough))]
    name = names[column]
    best = int(free[mask, column].max())
    return (
        f"no node with {format_units(name, int(request[column]))} {name} free in pool {pool}; "
        f"{matching} nodes match {constraints}; best has {format_units(name, max(best, 0))} {name} free"
    )
