"""Floating resources (``scheduling.floatingResources``, upstream's shape): licences,
connections to a file server — quantities a pool has, bound to no node.

Jobs request them like any resource; the scheduler places such a job on a node as if the
node had no such resource to fit, and admits it only while the pool's quantity, less what
its running jobs hold (in every cluster of the pool), covers the request.
"""

from __future__ import annotations

import msgspec

from armada.model.quantities import QuantityError, to_units

Quantity = str | int | float


class FloatingPool(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """How much of the resource one pool has."""

    name: str
    quantity: Quantity


class FloatingResource(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """A resource not tied to nodes, with a quantity per pool (pools not listed have none)."""

    name: str
    #: Accepted for upstream configs; quantities are tracked exactly (in the resource's units).
    resolution: Quantity = "1"
    pools: list[FloatingPool] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        for pool in self.pools:
            try:
                units = to_units(self.name, pool.quantity)
            except QuantityError as exc:
                raise ValueError(
                    f"floatingResources[{self.name}].pools[{pool.name}].quantity: {exc}"
                ) from None
            if units < 0:
                raise ValueError(f"floatingResources[{self.name}].pools[{pool.name}].quantity must be >= 0")

    def quantity_in(self, pool: str) -> int | None:
        """Units of this resource in ``pool`` (None: the pool has none configured)."""
        for entry in self.pools:
            if entry.name == pool:
                return to_units(self.name, entry.quantity)
        return None
