"""A server whose ingress policy allows NodePort, one Ingress annotation and one certificate,
and wildcard tolerations: what it allows is stored with the job, anything else is still
refused naming the field. The default policy's refusals: ``test_exposed_ports.py``."""

from __future__ import annotations

import pytest

from armada.client import ArmadaClient
from armada.model.ingress import IngressConfig, ServiceConfig
from armada.model.ingress_policy import IngressPolicy
from armada.services.settings import SubmissionSettings
from armada.settings import Settings
from tests.api.jobs import WEB, submit
from tests.servers import ApiServer

BODY_SIZE = "nginx.ingress.kubernetes.io/proxy-body-size"
POLICY = IngressPolicy(
    allowed_annotations=[BODY_SIZE],
    allowed_cert_names=["team-a-tls"],
    allowed_service_types=["NodePort", "Headless"],
)


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings(submission=SubmissionSettings(ingress_policy=POLICY, allow_wildcard_tolerations=True))


def test_what_the_policy_allows_is_kept_with_the_job(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    response = submit(
        server,
        queue,
        podSpec={**WEB, "tolerations": [{"operator": "Exists"}]},
        services=[
            {"ports": [8080]},  # NodePort, upstream's default type
            {"type": "Headless", "ports": [9090], "name": "peers"},
        ],
        ingress=[
            {
                "ports": [8080],
                "tlsEnabled": True,
                "certName": "team-a-tls",
                "annotations": {BODY_SIZE: "8m"},
                "useClusterIP": True,
            },
        ],
    )
    assert response.status_code == 200, response.text
    job_id = response.json()["jobResponseItems"][0]["jobId"]
    job = client.job_details([job_id], expand_spec=True)[job_id].job_spec
    assert job is not None
    assert job.services == [
        ServiceConfig(ports=[8080]),
        ServiceConfig(type="Headless", ports=[9090], name="peers"),
    ]
    assert job.ingress == [
        IngressConfig(
            ports=[8080],
            tls_enabled=True,
            cert_name="team-a-tls",
            annotations={BODY_SIZE: "8m"},
            use_cluster_ip=True,
        )
    ]


@pytest.mark.parametrize(
    ("ingress", "field"),
    [
        (
            {"ports": [8080], "annotations": {BODY_SIZE: "8m", "nginx.ingress.kubernetes.io/auth-url": "x"}},
            "ingress[0].annotations.nginx.ingress.kubernetes.io/auth-url",
        ),
        ({"ports": [8080], "tlsEnabled": True, "certName": "team-b-tls"}, "ingress[0].certName"),
    ],
)
def test_what_it_does_not_list_is_still_refused(
    server: ApiServer, queue: str, ingress: dict[str, object], field: str
) -> None:
    head = server.head()
    response = submit(server, queue, podSpec=WEB, ingress=[ingress])
    assert response.status_code == 400, response.text
    assert response.json()["field"] == f"jobRequestItems[0].{field}"
    assert server.head() == head
