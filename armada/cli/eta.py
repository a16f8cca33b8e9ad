"""``armada job eta``: when queued jobs are expected to start, in words."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from armada.model.wire.forecasts import JobForecastInfo


def span(seconds: float) -> str:
    """A rough length of time: ``40 s``, ``12 min``, ``3.5 h``, ``2.1 days``."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def describe(info: JobForecastInfo, now: datetime) -> str:
    """One forecast in words, e.g. ``in ~12 min (8 min to 20 min) at 10:42:00Z; learned from …``."""
    outcome = info.outcome.value
    if outcome == "FORECAST" and info.expected_start is not None:
        wait = (info.expected_start - now).total_seconds()
        text = f"in ~{span(wait)}" if wait > 0 else "now"
        if info.low is not None and info.high is not None and info.low != info.high:
            low, high = ((t - now).total_seconds() for t in (info.low, info.high))
            text += f" ({span(low)} to {span(high)})"
        elif info.high is None:
            text += " (possibly much later)"
        return f"{text} at {info.expected_start.isoformat()}; basis: {info.basis}"
    if outcome == "NOT_WITHIN_HORIZON":
        return "not within the forecast horizon"
    if outcome == "NEVER":
        return f"never: {info.basis}"
    return {"NOT_YET_FORECAST": "queued, not yet forecast (ask again shortly)", "STARTED": "started"}.get(
        outcome, "UNKNOWN"
    )
