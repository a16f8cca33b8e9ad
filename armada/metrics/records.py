"""``armada_undecodable_records_total``: stored records this process skipped as unreadable.

Any value above zero needs an operator: ``armada admin check`` lists the records.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.eventstore.unreadable import RecordKind, UnreadableRecords


class UnreadableRecordsCollector(Collector):
    def __init__(self, records: UnreadableRecords) -> None:
        self._records = records

    def collect(self) -> Iterator[Metric]:
        counter = CounterMetricFamily(
            "armada_undecodable_records",
            "Stored records (log events, job, queue and node specs) skipped because they cannot be decoded.",
            labels=["kind"],
        )
        for kind in get_args(RecordKind):
            counter.add_metric([kind], self._records.counts[kind])
        yield counter
