"""The kubernetes backend reads logs through pods/log (kubernetes-asyncio against the API
double): the selection is sent to the API server, lines come back stamped and selected."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from armada.executor.log_lines import LogMissing
from armada.model.leases import LogOrder
from tests.integration.executor.kube_backend import POD, Cluster


def order(**fields: object) -> LogOrder:
    return LogOrder(request_id="q", run_id="r1", job_id="j1", **fields)  # type: ignore[arg-type]


async def lines(system: Cluster, **fields: object) -> list[str]:
    return [line.line for line in await system.backend.read_log(order(**fields))]


@pytest.fixture
async def running(cluster: Cluster) -> Cluster:
    await cluster.launch()
    cluster.double.run(POD)
    now = time.time()
    for age, text in ((100, "old"), (5, "recent-1"), (1, "recent-2")):
        cluster.double.write_log(POD, text, at=now - age)
    cluster.double.write_log(POD, "crashed", at=now - 200, previous=True)
    return cluster


def log_queries(system: Cluster) -> list[str]:
    """The pods/log requests the API server got, lower-cased (the client sends ``True``)."""
    return [line.lower() for line in system.double.requests if "/log" in line]


async def test_all_lines_come_stamped(running: Cluster) -> None:
    read = await running.backend.read_log(order())
    assert [line.line for line in read] == ["old", "recent-1", "recent-2"]
    for line in read:
        assert (
            abs(datetime.fromisoformat(line.timestamp.replace("Z", "+00:00")).timestamp() - time.time()) < 200
        )
    assert "timestamps=true" in log_queries(running)[-1]


async def test_tail_since_and_limit_are_asked_of_the_api_server(running: Cluster) -> None:
    assert await lines(running, tail_lines=1) == ["recent-2"]
    assert "taillines=1" in log_queries(running)[-1]
    assert await lines(running, since_seconds=10) == ["recent-1", "recent-2"]
    assert "sinceseconds=10" in log_queries(running)[-1]
    assert await lines(running, since_seconds=10, tail_lines=1) == ["recent-2"]
    assert "limitbytes=" not in log_queries(running)[-1]


async def test_the_byte_limit_counts_stamps_and_drops_a_cut_stamp(running: Cluster) -> None:
    """``limitBytes`` counts stamped bytes (a kubelet drops trailing zeros, so stamps
    differ in length): a line cut inside its text is kept, one cut inside its stamp is not."""
    old, recent = (len(line.timestamp) + 1 for line in (await running.backend.read_log(order()))[:2])
    assert await lines(running, limit_bytes=old + 4) == ["old"]
    assert "limitbytes=" in log_queries(running)[-1]
    assert await lines(running, limit_bytes=old + 4 + 10) == ["old"]
    assert await lines(running, limit_bytes=old + 4 + recent + 3) == ["old", "rec"]


async def test_since_time_is_selected_exactly(running: Cluster) -> None:
    """The client has no ``sinceTime``: whole seconds are asked for, the rest is cut here."""
    since = datetime.fromtimestamp(time.time() - 3, UTC)
    assert await lines(running, since_time=since) == ["recent-2"]
    assert await lines(running, since_time=since, tail_lines=5) == ["recent-2"]
    assert "sinceseconds=" in log_queries(running)[-1]


async def test_previous_container(running: Cluster) -> None:
    assert await lines(running, previous=True) == ["crashed"]
    assert "previous=true" in log_queries(running)[-1].lower()


async def test_a_container_or_previous_instance_or_pod_that_is_not_there_is_missing(running: Cluster) -> None:
    with pytest.raises(LogMissing, match="not valid"):
        await lines(running, container="sidecar")
    running.double.previous_logs.clear()
    with pytest.raises(LogMissing, match="previous terminated container"):
        await lines(running, previous=True)
    gone = LogOrder(request_id="q", run_id="r9", job_id="j9")
    with pytest.raises(LogMissing, match="not found"):
        await running.backend.read_log(gone)
