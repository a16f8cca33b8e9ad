"""Kubernetes resource quantities and dense resource vectors.

Quantities are parsed exactly (``Decimal``) and then held as integers in a per-resource
*resolution* (``cpu`` in millicores, everything else in whole units, memory in bytes), so
that the scheduler can do integer numpy arithmetic with no rounding surprises. A
``ResourceIndex`` maps resource names to numpy columns.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from decimal import ROUND_CEILING, Decimal, InvalidOperation

import numpy as np
import numpy.typing as npt

ResourceVector = npt.NDArray[np.int64]

_BINARY_SUFFIXES = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$"
)

#: Largest integer amount of one resource we accept (fits int64 with room for sums).
MAX_UNITS = 2**62
#: Every Armada run is one pod, so it takes one unit of its node's ``pods`` capacity
#: (Kubernetes' allocatable ``pods``, 110 by default); the scheduler counts it like any resource.
PODS = "pods"
#: Resolution of each resource's integer unit; resources not listed use whole units.
DEFAULT_RESOLUTIONS: Mapping[str, Decimal] = {"cpu": Decimal("0.001")}


class QuantityError(ValueError):
    """A string that is not a valid Kubernetes quantity, or one out of range."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (``"100m"``, ``"4Gi"``, ``"1e3"``, ``2``) exactly."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a finite quantity: {value!r}")
        return Decimal(repr(value))
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise QuantityError(f"not a quantity: {value!r}")
    number = Decimal(match["number"])
    suffix = match["suffix"]
    if suffix in _BINARY_SUFFIXES:
        return number * _BINARY_SUFFIXES[suffix]
    if suffix in _DECIMAL_SUFFIXES:
        return number * _DECIMAL_SUFFIXES[suffix]
    try:
        return number.scaleb(int(suffix[1:]))
    except (InvalidOperation, OverflowError) as exc:  # pragma: no cover - absurd exponents
        raise QuantityError(f"quantity out of range: {value!r}") from exc


def resolution_of(resource: str) -> Decimal:
    """The size of one integer unit of ``resource``."""
    return DEFAULT_RESOLUTIONS.get(resource, Decimal(1))


@functools.lru_cache(maxsize=8192)
def to_units(resource: str, value: str | int | float) -> int:
    """Quantity of ``resource`` as integer units of its resolution, rounded up.

    Cached: workloads repeat the same few quantities millions of times.
    """
    quantity = parse_quantity(value)
    try:
        units = (quantity / resolution_of(resource)).to_integral_value(rounding=ROUND_CEILING)
    except InvalidOperation as exc:
        raise QuantityError(f"quantity out of range: {value!r}") from exc
    if abs(units) > MAX_UNITS:
        raise QuantityError(f"quantity out of range: {value!r}")
    return int(units)


def format_units(resource: str, units: int) -> str:
    """Human-readable quantity for integer ``units`` of ``resource`` (inverse of ``to_units``)."""
    if resource == "cpu":
        return str(units // 1000) if units % 1000 == 0 else f"{units}m"
    if resource in ("memory", "ephemeral-storage"):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            size = _BINARY_SUFFIXES[suffix]
            if units >= size and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)


def parse_resource_list(resources: Mapping[str, str | int | float]) -> dict[str, int]:
    """Parse a Kubernetes resource list into integer units per resource name."""
    return {name: to_units(name, value) for name, value in resources.items()}


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
