"""A queue's standing in a pool after a cycle: part of the scheduling reports' wire format.

Kept apart from :mod:`armada.scheduling.decisions` (which needs numpy) so that the report
types the client decodes import no numpy.
"""

from __future__ import annotations

import msgspec


class QueueShare(msgspec.Struct, frozen=True, rename="camel"):
    """One queue's standing in one pool after the cycle (all shares are dominant shares)."""

    weight: float
    fair_share: float
    adjusted_fair_share: float
    actual_share: float
    demand: float
    usage: float
    #: Dominant share of the short-job penalty charged in ``actual_share``.
    short_job_penalty: float = 0.0
