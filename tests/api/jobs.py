"""Job bodies for API tests."""

from __future__ import annotations

from typing import Any

import httpx

from armada.model import events as ev
from armada.model.ids import new_run_id
from armada.model.wire.jobs import JobSubmitRequestItem
from tests.factories import pod_spec
from tests.servers import ApiServer


def item(**fields: Any) -> JobSubmitRequestItem:
    fields.setdefault("namespace", "default")
    fields.setdefault("pod_spec", pod_spec())
    return JobSubmitRequestItem(**fields)


def raw_item(**fields: Any) -> dict[str, Any]:
    """A request item as JSON, for requests the typed client would not build."""
    return {"namespace": "default", "podSpec": pod_spec(), **fields}


def start(
    server: ApiServer,
    queue: str,
    job_set_id: str,
    job_id: str,
    *,
    node: str = "node-1",
    cluster: str = "cluster-1",
) -> str:
    """Stand in for the scheduler and an executor: lease the job and run it; return the run id."""
    run_id = new_run_id()
    envelope = {"queue": queue, "job_set_id": job_set_id, "job_id": job_id, "run_id": run_id}
    server.append(
        [
            ev.JobLeased(**envelope, cluster_id=cluster, node_id=node, pool="gpu"),
            ev.JobPending(**envelope, cluster_id=cluster, node_name=node, pod_name=f"armada-{job_id}-0"),
            ev.JobRunning(**envelope, cluster_id=cluster, node_name=node, pod_name=f"armada-{job_id}-0"),
        ]
    )
    return run_id


def ported_spec(*containers: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """A pod spec whose containers declare ``ports``."""
    spec = pod_spec()
    template = spec["containers"][0]
    spec["containers"] = [{**template, "name": name, "ports": ports} for name, ports in containers]
    return spec


WEB = ported_spec(("web", [{"containerPort": 8080}, {"containerPort": 9090, "protocol": "UDP"}]))


def submit(server: ApiServer, queue: str, **fields: Any) -> httpx.Response:
    body = {"queue": queue, "jobSetId": "set", "jobRequestItems": [raw_item(**fields)]}
    with httpx.Client(base_url=server.url) as http:
        return http.post("/v1/job/submit", json=body)
