"""Distinct rows of an integer matrix, by one lexicographic sort.

``np.unique(matrix, axis=0)`` views each row as an opaque byte string and sorts those with
a generic comparison: 5.6 ms for 5,000 nodes' resource rows, every scheduling cycle. A
``lexsort`` over the columns gives the same answer in 0.2 ms.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from armada.scheduling.columns import reduce_columns

IntArray = npt.NDArray[np.int64]


class UniqueRows(NamedTuple):
    #: The distinct rows, in lexicographic order (as ``np.unique(..., axis=0)``).
    values: IntArray
    #: For each input row, the index of its row in ``values``.
    inverse: IntArray
    #: How many input rows each distinct row stands for.
    counts: IntArray


def unique_rows(matrix: IntArray) -> UniqueRows:
    """The distinct rows of a 2-D ``matrix``, each input row's index among them, and their counts."""
    if len(matrix) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return UniqueRows(matrix[:0], empty, empty)
    order = np.lexsort(matrix.T[::-1])  # lexsort's last key is the primary one
    ordered = matrix[order]
    starts = np.ones(len(ordered), dtype=bool)
    starts[1:] = reduce_columns(np.logical_or, ordered[1:] != ordered[:-1])
    inverse = np.empty(len(matrix), dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), len(matrix)))
    return UniqueRows(ordered[starts], inverse, counts)
