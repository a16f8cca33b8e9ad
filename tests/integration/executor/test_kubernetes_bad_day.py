"""The kubernetes backend on a bad day, through the API double (issue 45): names a real API
server refuses, admission it does not pass, kubelet-written outcomes, lost nodes and
pending reasons only Events tell."""

from __future__ import annotations

import asyncio

import pytest

from armada.executor.runner import run_executor
from armada.executor.settings import ExecutorSettings
from armada.model.errors import InvalidRequest
from armada.model.metadata import as_label_value
from tests.integration.executor.kube_backend import HANG, POD, Cluster, final


# --- names ---------------------------------------------------------------------------------
async def test_a_queue_stored_with_a_name_kubernetes_refuses_still_gets_its_pod(cluster: Cluster) -> None:
    # A queue created before names had to be label values ("team-"): a 422 and a failed run
    # on every create, unless the label value is mapped.
    await cluster.launch(queue="team-")
    assert cluster.recorder.kinds("r1") == ["pending"]
    assert cluster.double.pod(POD)["metadata"]["labels"]["armada_queue_id"] == as_label_value("team-")


async def test_an_executor_with_a_cluster_id_that_is_no_label_value_does_not_start() -> None:
    settings = ExecutorSettings(cluster_id="cluster-a-", backend="fake")
    with pytest.raises(InvalidRequest) as refused:
        async with asyncio.timeout(HANG):  # a started executor would run until cancelled
            await run_executor(settings)
    assert refused.value.field == "clusterId"


# --- admission -----------------------------------------------------------------------------
async def test_an_invalid_pod_is_the_jobs_failure_with_the_api_servers_causes(cluster: Cluster) -> None:
    await cluster.launch(labels={"team": "a b"})
    status = await final(cluster)
    assert (status.kind, status.retryable) == ("failed", False)
    assert 'Pod "armada-j1-0" is invalid: metadata.labels: Invalid value: "a b"' in status.reason


async def test_a_webhook_refusal_is_the_jobs_failure_with_the_webhooks_message(cluster: Cluster) -> None:
    cluster.double.admission.webhook_denies["team"] = "team label needs approval"
    await cluster.launch(labels={"team": "a"})
    status = await final(cluster)
    assert (status.kind, status.retryable) == ("failed", False)
    assert 'admission webhook "policy.example.com" denied the request: team label needs approval' in (
        status.reason
    )


async def test_a_quota_counts_only_unfinished_pods(cluster: Cluster) -> None:
    cluster.double.admission.pod_quota["default"] = 1
    await cluster.launch()
    cluster.double.run(POD)
    cluster.double.exit(POD, 0)
    await final(cluster)
    await cluster.launch("r2", "j2")
    assert cluster.recorder.kinds("r2") == ["pending"]
