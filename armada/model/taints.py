"""Node taints, one type from the executor's report through the log to the scheduler."""

from __future__ import annotations

import msgspec


class Taint(msgspec.Struct, frozen=True, omit_defaults=True):
    """A Kubernetes node taint: as the executor reports it, as the log stores it and as the
    scheduler matches tolerations against it (``PreferNoSchedule`` never blocks)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"
