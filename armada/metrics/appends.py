"""The append path's own figures: how busy the serialised append is, and how it groups writers.

Appends are serialised, so their lock's busy fraction (``rate()`` of the busy seconds) says
whether they bound throughput; writers per group says how much group commit shares.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.eventstore.store import EventStore


class AppendCollector(Collector):
    def __init__(self, store: EventStore) -> None:
        self._store = store

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "armada_eventstore_append_lock_busy_seconds",
            "Seconds this process held the serialised append (its rate is the lock's busy fraction).",
            value=self._store.append_lock_busy_seconds,
        )
        yield CounterMetricFamily(
            "armada_eventstore_append_groups",
            "Transactions that committed appends (group commit: one for all the writers queued).",
            value=self._store.appended_groups,
        )
        yield CounterMetricFamily(
            "armada_eventstore_append_writers",
            "Writes committed; divided by the groups, the writers each transaction served.",
            value=self._store.appended_writers,
        )
        yield from self._lanes()

    def _lanes(self) -> Iterator[Metric]:
        """Per lane (urgent, prompt, bulk): writes, and the seconds they waited where."""
        families = {
            "writes": CounterMetricFamily(
                "armada_eventstore_append_lane_writes",
                "Writes that had their turn, by lane.",
                labels=["lane"],
            ),
            "queued": CounterMetricFamily(
                "armada_eventstore_append_lane_queued_seconds",
                "Seconds writes waited for the append lock or their turn in a group, by lane.",
                labels=["lane"],
            ),
            "turn": CounterMetricFamily(
                "armada_eventstore_append_lane_turn_seconds",
                "Seconds of the writes' own turns (reads and checks under the lock), by lane.",
                labels=["lane"],
            ),
            "commit": CounterMetricFamily(
                "armada_eventstore_append_lane_commit_seconds",
                "Seconds from the end of a write's turn until its group committed, by lane.",
                labels=["lane"],
            ),
        }
        for lane, times in self._store.waits.lanes.items():
            for name, family in families.items():
                family.add_metric([lane.name.lower()], getattr(times, name))
        yield from families.values()
