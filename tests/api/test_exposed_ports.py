"""Submitting ``services`` and ``ingress`` over real HTTP with the server's default ingress
policy: every bad config, and everything the policy does not allow (NodePort, Ingress
annotations, a ``certName``, a wildcard toleration), refused with a 400 naming its field (and
nothing appended). What a permissive policy keeps: ``test_ingress_policy.py``."""

from __future__ import annotations

from typing import Any

import pytest

from armada.client import ArmadaClient
from armada.model.ingress import ServiceConfig
from tests.api.jobs import WEB, ported_spec, submit
from tests.servers import ApiServer


def test_a_named_service_is_kept_and_confined_to_the_jobs_own_names(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    """The review's repro: a Service named ``kubernetes`` in ``default``. Accepted as upstream
    accepts it, but the executor names the Service ``armada-<jobId>-0-kubernetes`` (see
    ``tests/integration/executor/test_kubernetes_exposure.py``): it can never be the cluster's."""
    response = submit(
        server, queue, podSpec=WEB, services=[{"type": "Headless", "name": "kubernetes", "ports": [8080]}]
    )
    assert response.status_code == 200, response.text
    job_id = response.json()["jobResponseItems"][0]["jobId"]
    job = client.job_details([job_id], expand_spec=True)[job_id].job_spec
    assert job is not None
    assert job.services == [ServiceConfig(type="Headless", ports=[8080], name="kubernetes")]


BAD: list[tuple[dict[str, Any], str]] = [
    ({"services": [{"ports": [8081]}]}, "services[0].ports[0]"),  # no container declares it
    ({"services": [{"ports": []}]}, "services[0].ports"),
    ({"services": [{"ports": [0]}]}, "services[0].ports[0]"),
    ({"services": [{"ports": [70000]}]}, "services[0].ports[0]"),
    ({"services": [{"type": "LoadBalancer", "ports": [8080]}]}, "services[0].type"),
    ({"services": [{"ports": [8080], "colour": "red"}]}, "services[0].colour"),
    ({"services": [{"ports": [8080]}, {"ports": [8080]}]}, "services[1].ports[0]"),
    ({"services": [{"type": "Headless", "ports": [8080], "name": "Not_A_Label"}]}, "services[0].name"),
    (
        {
            "services": [
                {"type": "Headless", "ports": [8080], "name": "x"},
                {"type": "Headless", "ports": [9090], "name": "x"},
            ]
        },
        "services[1].name",
    ),
    # NodePort is off by default, and it is the type of a config that names none (upstream's).
    ({"services": [{"ports": [8080]}]}, "services[0].type"),
    ({"services": [{"type": "NodePort", "ports": [8080]}]}, "services[0].type"),
    # Names Armada gives its own Services, and names too long for armada-<jobId>-0-<name>.
    ({"services": [{"type": "Headless", "ports": [8080], "name": "headless"}]}, "services[0].name"),
    ({"services": [{"type": "Headless", "ports": [8080], "name": "n" * 28}]}, "services[0].name"),
    # No Ingress annotation is allowed by default: none of the review's reaches the controller.
    (
        {"ingress": [{"ports": [8080], "annotations": {"nginx.ingress.kubernetes.io/server-snippet": "x"}}]},
        "ingress[0].annotations.nginx.ingress.kubernetes.io/server-snippet",
    ),
    (
        {"ingress": [{"ports": [8080], "annotations": {"nginx.ingress.kubernetes.io/server-alias": "b.x"}}]},
        "ingress[0].annotations.nginx.ingress.kubernetes.io/server-alias",
    ),
    (
        {"ingress": [{"ports": [8080], "annotations": {"kubernetes.io/ingress.class": "public"}}]},
        "ingress[0].annotations.kubernetes.io/ingress.class",
    ),
    (
        {
            "ingress": [
                {
                    "ports": [8080],
                    "annotations": {"nginx.ingress.kubernetes.io/whitelist-source-range": "0.0.0.0/0"},
                }
            ]
        },
        "ingress[0].annotations.nginx.ingress.kubernetes.io/whitelist-source-range",
    ),
    # Another team's certificate: no Secret is allowed as certName by default.
    ({"ingress": [{"ports": [8080], "tlsEnabled": True, "certName": "team-b-tls"}]}, "ingress[0].certName"),
    # A wildcard toleration (every taint, the control plane's included).
    ({"podSpec": {**WEB, "tolerations": [{"operator": "Exists"}]}}, "podSpec.tolerations[0]"),
    (
        {
            "podSpec": {
                **WEB,
                "tolerations": [
                    {"key": "a", "operator": "Exists"},
                    {"operator": "Exists", "effect": "NoSchedule"},
                ],
            }
        },
        "podSpec.tolerations[1]",
    ),
    ({"ingress": [{"ports": [8080, 8080]}]}, "ingress[0].ports[1]"),
    ({"ingress": [{"ports": [8080]}, {"ports": [8080]}]}, "ingress[1].ports[0]"),
    ({"ingress": [{"ports": [8080], "certName": "Bad Secret"}]}, "ingress[0].certName"),
    ({"ingress": [{"ports": [-1]}]}, "ingress[0].ports[0]"),
]


@pytest.mark.parametrize(("fields", "field"), BAD, ids=[f for _, f in BAD])
def test_bad_configs_are_refused_naming_the_field(
    server: ApiServer, queue: str, fields: dict[str, Any], field: str
) -> None:
    head = server.head()
    response = submit(server, queue, **{"podSpec": WEB, **fields})
    assert response.status_code == 400, response.text
    assert response.json()["field"] == f"jobRequestItems[0].{field}"
    assert server.head() == head


def test_ambiguous_and_host_ports_are_refused(server: ApiServer, queue: str) -> None:
    twice = ported_spec(("a", [{"containerPort": 8080}]), ("b", [{"containerPort": 8080}]))
    response = submit(server, queue, podSpec=twice, services=[{"type": "Headless", "ports": [8080]}])
    assert response.status_code == 400
    assert "containers a, b" in response.json()["detail"]
    host = ported_spec(("a", [{"containerPort": 8080, "hostPort": 8080}]))
    response = submit(server, queue, podSpec=host, ingress=[{"ports": [8080]}])
    assert response.status_code == 400
    assert response.json()["field"] == "jobRequestItems[0].ingress[0].ports[0]"
    assert "hostPort" in response.json()["detail"]
