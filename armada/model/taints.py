"""Node taints, one type from the executor's report through the log to the scheduler."""

from __future__ import annotations

import msgspec


class Taint(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A Kubernetes node taint: as the executor reports it, as the log stores it and as the
    scheduler matches tolerations against it (``PreferNoSchedule`` never blocks).

    Unknown fields are refused: a struct that skips them leaves their values unchecked, so
    the lease route (whose node reports carry taints) would lose its typed decoding
    (``armada.api.guard``). A field added here is a schema change like any other
    (docs/development.md)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"
