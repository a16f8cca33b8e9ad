"""The executor checks every lease again before it creates anything: a lease breaking its
namespaces, pod security profile or service accounts is reported failed with the reason and
never reaches the backend, even when the server stored and leased such a job."""

from __future__ import annotations

import asyncio
import time

import msgspec

from armada.client import ArmadaClient
from armada.executor.backends.fake import FakeBackend
from armada.executor.runner import run_executor
from armada.executor.settings import FakeSettings
from armada.model import events as ev
from armada.model.ids import new_job_ids, new_run_id
from armada.model.jobs import Job, ResourceRequirements
from armada.model.leases import Lease
from armada.model.queues import Queue
from tests.integration.executor.conftest import RunningExecutor, fast_settings, lease
from tests.integration.executor.contract_server import ContractServer
from tests.processes import TEST_EXECUTOR_TOKEN
from tests.servers import serving

HOST_PATH = {"name": "root", "hostPath": {"path": "/"}}


def fake() -> FakeBackend:
    return FakeBackend(FakeSettings(nodes=2), "test-cluster")


def _with_spec(base: Lease, **spec: object) -> Lease:
    return msgspec.structs.replace(base, pod_spec={**base.pod_spec, **spec})


async def test_refused_leases_are_failed_and_never_started(
    server: ContractServer, executor: RunningExecutor
) -> None:
    refused = {
        "hostpath": (_with_spec(lease("hostpath"), volumes=[HOST_PATH]), "podSpec.volumes[0].hostPath"),
        "node": (_with_spec(lease("node"), nodeName="n1"), "podSpec.nodeName"),
        "network": (_with_spec(lease("network"), hostNetwork=True), "podSpec.hostNetwork"),
        "foreign": (lease("foreign", namespace="team-b"), "namespace"),
        "own": (lease("own", namespace="armada-jobs"), "namespace"),
        "account": (
            _with_spec(lease("account"), serviceAccountName="armada-executor"),
            "podSpec.serviceAccountName",
        ),
    }
    server.offer(lease("ok", argv=["sleep", "0"]), *(bad for bad, _ in refused.values()))
    # Its own namespace is refused even where the allow-list names it.
    settings = {"allowed_namespaces": ["default", "armada-jobs"], "own_namespace": "armada-jobs"}
    async with executor(cluster=fake(), **settings):
        await server.wait_for(lambda: {"ok", *refused} <= {e.run_id for e in server.events.values()})
        await server.wait_for(lambda: "succeeded" in server.kinds("ok"))
    assert server.kinds("ok") == ["pending", "running", "succeeded"]
    for run_id, (_, field) in refused.items():
        assert server.kinds(run_id) == ["failed"], run_id  # never pending: nothing was created
        (event,) = (e for e in server.events.values() if e.run_id == run_id)
        assert event.reason.startswith(f"refused by the executor: {field}: "), event.reason
        assert not event.retryable


async def test_a_privileged_executor_runs_what_baseline_refuses(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.offer(_with_spec(lease("hostpath", argv=["sleep", "0"]), volumes=[HOST_PATH]))
    async with executor(cluster=fake(), pod_security_profile="privileged"):
        await server.wait_for(lambda: "succeeded" in server.kinds("hostpath"))


async def test_a_stored_unsafe_job_is_failed_by_the_executor(database_url: str) -> None:
    """A job that bypassed submit (written straight to the log) is leased by the real server,
    refused by the executor, and fails with the executor's reason."""
    with serving(database_url) as api, ArmadaClient(api.url) as client:
        client.create_queue(Queue(name="q"))
        (job_id,) = new_job_ids(1)
        run_id = new_run_id()
        spec = {
            "containers": [
                {
                    "name": "m",
                    "image": "alpine",
                    "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
                }
            ],
            "volumes": [HOST_PATH],
            "priorityClassName": "armada-default",
        }
        job = Job(
            id=job_id,
            queue="q",
            job_set_id="set",
            namespace="default",
            pod_spec=spec,
            scheduling_resource_requirements=ResourceRequirements(requests={"cpu": "1"}, limits={"cpu": "1"}),
        )
        api.append(
            [
                ev.JobSubmitted(job=job, queue="q", job_set_id="set", job_id=job_id),
                ev.JobQueued(queue="q", job_set_id="set", job_id=job_id),
                ev.JobLeased(
                    queue="q",
                    job_set_id="set",
                    job_id=job_id,
                    run_id=run_id,
                    cluster_id="test-cluster",
                    node_id="test-cluster-node-0",
                    pool="default",
                ),
            ]
        )
        settings = msgspec.structs.replace(  # the real server, which lets only executors lease
            fast_settings(ContractServer()), server_url=api.url, token=TEST_EXECUTOR_TOKEN
        )
        task = asyncio.create_task(run_executor(settings, backend=fake()))
        try:
            deadline = time.monotonic() + 60
            while client.job_status([job_id])[job_id] != "FAILED":
                assert time.monotonic() < deadline, client.job_status([job_id])
                assert not task.done(), task
                await asyncio.sleep(0.1)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        error = client.job_errors([job_id])[job_id]
        assert error.startswith("refused by the executor: podSpec.volumes[0].hostPath: "), error
