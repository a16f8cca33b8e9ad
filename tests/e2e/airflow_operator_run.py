"""Upstream's Airflow operator (``armada-airflow``'s ``ArmadaOperator``) run against an
Armada gRPC address, as an Airflow worker runs a task: render its templates, then execute.

Run by ``tests/e2e/test_airflow_operator.py`` with the Python of an isolated virtualenv that
holds Apache Airflow and armada-airflow (whose top-level package is also named ``armada``,
so it cannot share this project's environment):

    python airflow_operator_run.py ADDRESS QUEUE USER:PASSWORD

The operator sends credentials only over TLS, with gRPC's default roots (the test points
``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` at its CA). Prints one JSON line: what each scenario's
task returned or raised.
"""

# ruff: noqa: I001 (the ``armada`` imported here is armada-airflow's package, not this project's)
from __future__ import annotations

import base64
import json
import sys
from typing import Any

import grpc
from airflow.sdk import DAG
from armada.model import GrpcChannelArgs
from armada.operators.armada import ArmadaOperator
from armada.operators.errors import ArmadaOperatorJobFailedError
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

RUN_ID = "manual__2026-11-24T00:00:00"


class BasicAuth(grpc.AuthMetadataPlugin):
    """How armada-airflow users pass credentials: a metadata plugin in ``GrpcChannelArgs``."""

    def __init__(self, user_password: str) -> None:
        self.value = "Basic " + base64.b64encode(user_password.encode()).decode()

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        callback((("authorization", self.value),), None)


class TaskInstance:
    """The parts of Airflow's task instance the operator reads and writes (its XComs are kept
    here instead of Airflow's metadata database)."""

    def __init__(self, task: ArmadaOperator, try_number: int) -> None:
        self.task = task
        self.dag_id = task.dag_id
        self.task_id = task.task_id
        self.run_id = RUN_ID
        self.map_index = -1
        self.try_number = try_number
        self.max_tries = task.retries
        self.xcoms: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcoms[key] = value

    def xcom_pull(self, key: str, task_ids: str | None = None, map_indexes: int | None = None) -> Any:
        return self.xcoms.get(key)


def job(*args: str) -> submit_pb2.JobSubmitRequestItem:
    quantity = {"cpu": resource.Quantity(string="100m"), "memory": resource.Quantity(string="64Mi")}
    container = core.Container(
        name="main",
        image="alpine",
        args=list(args),
        resources=core.ResourceRequirements(requests=quantity, limits=quantity),
    )
    return submit_pb2.JobSubmitRequestItem(
        namespace="default", priority=1, pod_spec=core.PodSpec(containers=[container], restartPolicy="Never")
    )


def run(task_id: str, item: submit_pb2.JobSubmitRequestItem, try_number: int = 1) -> dict[str, Any]:
    """One try of a task: the operator's result, or the failure it raised."""
    dag = DAG("armada-e2e", schedule=None)  # a fresh parse of the same DAG for every try
    operator = ArmadaOperator(
        task_id=task_id,
        name=task_id,
        dag=dag,
        channel_args=GrpcChannelArgs(target=ADDRESS, auth=AUTH),
        armada_queue=QUEUE,
        job_request=item,
        job_set_prefix="airflow-",
        poll_interval=1,
        deferrable=False,
        reattach_policy="always",
        retries=1,
    )
    ti = TaskInstance(operator, try_number)
    context: Any = {"ti": ti, "run_id": RUN_ID, "dag": dag}
    operator.render_template_fields(context)
    try:
        return {"result": operator.execute(context), "annotations": dict(operator.job_request.annotations)}
    except ArmadaOperatorJobFailedError as failure:
        return {"failed": str(failure), "state": failure.state.name, "reason": failure.reason}


if __name__ == "__main__":
    ADDRESS, QUEUE, AUTH = sys.argv[1], sys.argv[2], BasicAuth(sys.argv[3])
    outcome = {
        "succeeds": run("succeeds", job("exit", "0")),
        "fails": run("fails", job("exit", "3")),
        # The task's second try finds its job again by external job URI and reattaches.
        "reattaches": run("succeeds", job("exit", "0"), try_number=2),
    }
    print(json.dumps(outcome, default=str))
