"""The asyncio client against a real server: the same calls, awaited."""

from __future__ import annotations

import asyncio

import pytest

from armada.client import ArmadaApiError, AsyncArmadaClient
from armada.model.queues import Queue
from tests.api.jobs import item
from tests.servers import ApiServer


async def test_async_client_flow(server: ApiServer) -> None:
    async with AsyncArmadaClient(server.url) as client:
        assert await client.health()
        await client.create_queue(Queue(name="async-queue", priority_factor=2))
        assert (await client.get_queue("async-queue")).priority_factor == 2
        assert "async-queue" in [q.name for q in await client.list_queues()]
        with pytest.raises(ArmadaApiError) as missing:
            await client.submit_jobs("no-such-queue", "set", [item()])
        assert missing.value.status == 404

        stream = client.job_set_events("async-queue", "set", watch=True)
        [job_id] = await client.submit_jobs("async-queue", "set", [item()])
        first = await asyncio.wait_for(anext(stream), 10)
        assert (first.event.type, first.event.job_id) == ("submitted", job_id)
        await stream.aclose()

        assert await client.job_status([job_id]) == {job_id: "QUEUED"}
        assert await client.reprioritize_jobs("async-queue", "set", [job_id], 1) == {job_id: ""}
        assert await client.cancel_jobs("async-queue", "set", [job_id]) == [job_id]
        assert (await client.job_details([job_id]))[job_id].state == "CANCELLED"
        assert await client.job_errors([job_id]) == {job_id: ""}
        assert await client.run_details(["nosuchrun"]) == {}
        assert await client.preempt_jobs("async-queue", "set", [job_id]) == []
        assert await client.cancel_job_set("async-queue", "set") == []
        assert await client.active_queues() == {}
        await client.cordon_queue("async-queue")
        failures = await client.update_queues([Queue(name="async-queue", priority_factor=3)])
        assert failures.failed_queues == []
        assert (await client.create_queues([Queue(name="async-queue")])).failed_queues
        await client.delete_queue("async-queue")
