"""Dense resource vectors: a ``ResourceIndex`` maps resource names to numpy columns.

Amounts are integers in each resource's resolution (:mod:`armada.model.quantities`), so
that the scheduler does integer numpy arithmetic with no rounding surprises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

ResourceVector = npt.NDArray[np.int64]

#: Every Armada run is one pod, so it takes one unit of its node's ``pods`` capacity
#: (Kubernetes' allocatable ``pods``, 110 by default); the scheduler counts it like any resource.
PODS = "pods"


class ResourceIndex:
    """Maps resource names to columns of dense ``int64`` vectors.

    The index only grows: a resource seen for the first time gets the next column, so
    vectors made earlier stay valid once padded with :meth:`pad`.
    """

    def __init__(self, names: Iterable[str] = ("cpu", "memory")) -> None:
        self._columns: dict[str, int] = {}
        for name in names:
            self.column(name)

    @property
    def names(self) -> list[str]:
        return list(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def column(self, name: str) -> int:
        """Column of ``name``, adding it if new."""
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = len(self._columns)
        return column

    def vector(self, units: Mapping[str, int]) -> ResourceVector:
        """Dense vector for a mapping of resource name to integer units."""
        columns = [self.column(name) for name in units]
        out = np.zeros(len(self._columns), dtype=np.int64)
        out[columns] = list(units.values())
        return out

    def pad(self, vector: ResourceVector) -> ResourceVector:
        """Extend a vector made before new resources were added."""
        if len(vector) == len(self._columns):
            return vector
        out = np.zeros(len(self._columns), dtype=np.int64)
        out[: len(vector)] = vector
        return out

    def mapping(self, vector: ResourceVector) -> dict[str, int]:
        """Sparse mapping (non-zero entries) of a dense vector."""
        return {
            name: int(vector[col]) for name, col in self._columns.items() if col < len(vector) and vector[col]
        }
