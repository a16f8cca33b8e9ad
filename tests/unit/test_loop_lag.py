"""The event-loop lag probe: a loop held by synchronous work shows in its histogram."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry

from armada.metrics.loop_lag import PROBE_SECONDS, LoopLag


def _late(registry: CollectorRegistry) -> tuple[float, float]:
    """Samples taken, and those later than a quarter second."""
    count = registry.get_sample_value("armada_event_loop_lag_seconds_count")
    within = registry.get_sample_value("armada_event_loop_lag_seconds_bucket", {"le": "0.25"})
    assert count is not None and within is not None
    return count, count - within


async def test_a_loop_held_by_synchronous_work_shows_its_lag() -> None:
    registry = CollectorRegistry()
    probe = LoopLag(registry)
    probe.start()
    await asyncio.sleep(PROBE_SECONDS * 3.5)
    samples, late = _late(registry)
    assert samples >= 2
    time.sleep(0.6)  # noqa: ASYNC251 - holds the loop: the probe's sleep ends at least 0.5 s late
    await asyncio.sleep(PROBE_SECONDS * 1.5)
    await probe.stop()
    assert _late(registry)[1] > late
