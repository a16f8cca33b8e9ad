"""Kubernetes resource quantities (``"100m"``, ``"4Gi"``, ``"1e3"``), parsed exactly.

Quantities are parsed as ``Decimal`` and held as integers in a per-resource *resolution*
(``cpu`` in millicores, everything else in whole units, memory in bytes). No numpy here: the
client and the retry policies' checks use it; the dense vectors are :mod:`armada.model.resources`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal, InvalidOperation

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
