"""Over real HTTP: ``/metrics`` shows how busy the serialised append is and how it groups writers."""

from __future__ import annotations

import httpx

from armada.client import ArmadaClient
from tests.api.jobs import item
from tests.metrics import Samples, parse_samples, value
from tests.servers import ApiServer

NAMES = (
    "armada_eventstore_append_lock_busy_seconds_total",
    "armada_eventstore_append_groups_total",
    "armada_eventstore_append_writers_total",
)


def _appends(server: ApiServer) -> dict[str, float]:
    samples: Samples = parse_samples(httpx.get(f"{server.url}/metrics", timeout=30).text)
    return {name: value(samples, name) for name in NAMES}


def test_each_committed_write_counts_and_the_lock_time_grows(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    before = _appends(server)
    client.submit_jobs(queue, "metered", [item(), item()])
    client.submit_jobs(queue, "metered", [item()])
    after = _appends(server)
    busy, groups, writers = NAMES
    assert after[busy] > before[busy] >= 0
    assert after[writers] >= before[writers] + 2  # one per submission (others may write too)
    assert before[writers] >= before[groups] >= 1 and after[groups] > before[groups]
