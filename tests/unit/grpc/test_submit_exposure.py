"""Upstream's ``ingress`` and ``services`` messages become the REST body's configs, checked
by the same bounds (a port of 0 or past 65535 is refused naming its field)."""

from __future__ import annotations

import pytest
from armada_client.armada import submit_pb2

from armada.api.grpc.submit import submit_request
from armada.model.errors import InvalidRequest
from armada.model.ingress import IngressConfig, ServiceConfig


def request(item: submit_pb2.JobSubmitRequestItem) -> submit_pb2.JobSubmitRequest:
    return submit_pb2.JobSubmitRequest(queue="q", job_set_id="s", job_request_items=[item])


def test_ingress_and_services_are_converted_field_by_field() -> None:
    item = submit_pb2.JobSubmitRequestItem(
        namespace="default",
        services=[
            submit_pb2.ServiceConfig(ports=[8080]),  # NodePort: the enum's zero value
            submit_pb2.ServiceConfig(type=submit_pb2.ServiceType.Headless, ports=[7000], name="peers"),
        ],
        ingress=[
            submit_pb2.IngressConfig(
                ports=[8080, 9090],
                annotations={"a": "b"},
                tls_enabled=True,
                cert_name="c",
                use_clusterIP=True,
            )
        ],
    )
    [converted] = submit_request(request(item)).job_request_items
    assert converted.services == [
        ServiceConfig(type="NodePort", ports=[8080]),
        ServiceConfig(type="Headless", ports=[7000], name="peers"),
    ]
    assert converted.ingress == [
        IngressConfig(
            ports=[8080, 9090], annotations={"a": "b"}, tls_enabled=True, cert_name="c", use_cluster_ip=True
        )
    ]


@pytest.mark.parametrize("port", [0, 65536, 2**32 - 1])
def test_ports_out_of_range_name_their_field(port: int) -> None:
    item = submit_pb2.JobSubmitRequestItem(
        namespace="default", ingress=[submit_pb2.IngressConfig(ports=[80, port])]
    )
    with pytest.raises(InvalidRequest) as refused:
        submit_request(request(item))
    assert refused.value.field == "jobRequestItems[0].ingress[0].ports[1]"
