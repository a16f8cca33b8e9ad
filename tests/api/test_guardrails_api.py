"""Submission guardrails over REST, on SQLite and PostgreSQL: defaults stored, bad bounds refused.

The module's ``server`` runs with guardrail settings; ``client`` and ``queue`` come from conftest."""

from __future__ import annotations

import pytest

from armada.client import ArmadaClient
from armada.client.errors import ArmadaApiError
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION, GANG_ID_ANNOTATION, GANG_NODE_UNIFORMITY_ANNOTATION
from armada.settings import Settings, load_settings
from tests.e2e.cluster import job
from tests.servers import ApiServer

TOLERATION = {"key": "example.com/default", "operator": "Exists", "value": "", "effect": "NoSchedule"}
SUBMISSION = {
    "defaultActiveDeadline": "1h30m",
    "minTerminationGracePeriod": "10s",
    "maxTerminationGracePeriod": "2m",
    "defaultJobTolerations": [TOLERATION],
    "defaultGangNodeUniformityLabel": "zone",
}


@pytest.fixture(scope="module")
def settings() -> Settings:
    return load_settings(env={}, overrides={"submission": SUBMISSION})


def test_defaults_are_stored_with_the_job(client: ArmadaClient, queue: str) -> None:
    gang = {GANG_ID_ANNOTATION: "g", GANG_CARDINALITY_ANNOTATION: "2"}
    plain, member, _ = client.submit_jobs(
        queue, "s", [job("sleep 1"), job("sleep 1", annotations=gang), job("sleep 1", annotations=gang)]
    )
    details = client.job_details([plain, member], expand_spec=True)
    spec = details[plain].job_spec.pod_spec  # type: ignore[union-attr]
    assert (spec["activeDeadlineSeconds"], spec["terminationGracePeriodSeconds"]) == (5400, 10)
    assert spec["tolerations"] == [TOLERATION]
    assert details[member].job_spec.annotations[GANG_NODE_UNIFORMITY_ANNOTATION] == "zone"  # type: ignore[union-attr]


@pytest.mark.parametrize("grace", [5, 121])
def test_grace_periods_out_of_bounds_are_refused_and_nothing_is_stored(
    client: ArmadaClient, queue: str, server: ApiServer, grace: int
) -> None:
    bad = job("sleep 1")
    bad.pod_spec["terminationGracePeriodSeconds"] = grace  # type: ignore[index]
    head = server.head()
    with pytest.raises(ArmadaApiError) as refused:
        client.submit_jobs(queue, "s", [job("sleep 1"), bad])
    assert (refused.value.status, refused.value.field) == (
        400,
        "jobRequestItems[1].podSpec.terminationGracePeriodSeconds",
    )
    assert "[10, 120]" in refused.value.detail
    assert server.head() == head
