"""How late the server's event loop runs what is ready to run: its lag, as a histogram.

Every request, stream, lease call and the scheduler of a server process share one event
loop, so a request waits at each of its awaits behind whatever else is ready. A probe
sleeps :data:`PROBE_SECONDS` over and over and records how much later than asked it woke:
a lag of tens of milliseconds most of the time says the process is short of CPU (or holds
the loop with long stretches of work), and every request's latency grows by about as much
at each await. The probe costs a wake-up every :data:`PROBE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry, Histogram

from armada.tasks import cancel_and_wait

#: The probe's sleep (also how often it samples).
PROBE_SECONDS = 0.1
#: From a millisecond (an idle loop) to seconds (a stalled one).
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class LoopLag:
    """A background service: samples the running loop's lag into ``armada_event_loop_lag_seconds``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.seconds = Histogram(
            "armada_event_loop_lag_seconds",
            f"How much later than asked a {PROBE_SECONDS} s sleep on the server's event loop woke.",
            buckets=BUCKETS,
            registry=registry,
        )
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._probe(), name="loop-lag-probe")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    async def _probe(self) -> None:
        while True:
            began = time.perf_counter()
            await asyncio.sleep(PROBE_SECONDS)
            self.seconds.observe(max(0.0, time.perf_counter() - began - PROBE_SECONDS))
