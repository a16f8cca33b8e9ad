from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from armada.model.quantities import QuantityError, format_units, parse_quantity, to_units
from armada.model.resources import ResourceIndex


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", Decimal("0.1")),
        ("4Gi", Decimal(4 * 2**30)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("1E", Decimal(10**18)),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("128Mi", Decimal(128 * 2**20)),
        ("2k", Decimal(2000)),
        (2, Decimal(2)),
        (0.25, Decimal("0.25")),
    ],
)
def test_parses_kubernetes_quantities_exactly(text: str | int | float, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "4GiB", "--1", "1e", float("nan"), float("inf"), True])
def test_rejects_malformed_quantities(bad: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_units_use_per_resource_resolution() -> None:
    assert to_units("cpu", "100m") == 100
    assert to_units("cpu", 2) == 2000
    assert to_units("memory", "1Mi") == 2**20
    assert to_units("nvidia.com/gpu", "1") == 1
    assert to_units("cpu", "0.0001") == 1  # rounded up, never down


def test_absurd_quantities_are_out_of_range() -> None:
    with pytest.raises(QuantityError):
        to_units("memory", "1e400")


@given(st.integers(min_value=0, max_value=2**40))
def test_format_round_trips(units: int) -> None:
    for resource in ("cpu", "memory", "nvidia.com/gpu"):
        assert to_units(resource, format_units(resource, units)) == units


def test_index_grows_and_pads() -> None:
    index = ResourceIndex()
    v = index.vector({"cpu": 1000, "memory": 5})
    assert index.names == ["cpu", "memory"]
    w = index.vector({"nvidia.com/gpu": 2})
    assert len(index) == 3
    assert np.array_equal(index.pad(v), [1000, 5, 0])
    assert index.mapping(w) == {"nvidia.com/gpu": 2}
