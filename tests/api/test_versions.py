"""Versions over real HTTP (both databases): the server's and its schema's, the CLI's, and the
executor protocol, whose older executors (0.9.0's calls name no version) keep working."""

from __future__ import annotations

import httpx
from typer.testing import CliRunner

import armada
from armada.cli.main import app
from armada.client import ArmadaClient
from armada.eventstore import migrate
from armada.model.leases import EXECUTOR_PROTOCOL
from tests.servers import EXECUTOR_HEADERS, ApiServer

NODES = [{"name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi"}}]


def test_the_server_says_its_version_and_its_schema(client: ArmadaClient) -> None:
    version = client.server_version()
    assert version.version == armada.__version__
    assert version.schema_revision == version.schema_head == migrate.head()
    assert version.executor_protocol == EXECUTOR_PROTOCOL


def test_armada_version_prints_the_client_and_with_a_url_the_server(server: ApiServer) -> None:
    alone = CliRunner().invoke(app, ["version"], env={"ARMADA_URL": ""})
    assert (alone.exit_code, alone.stdout) == (0, f"{armada.__version__}\n")
    both = CliRunner().invoke(app, ["version", "--url", server.url])
    assert both.exit_code == 0, both.output
    assert both.stdout.splitlines() == [
        f"client {armada.__version__}",
        f"server {armada.__version__} (schema {migrate.head()}, newest known {migrate.head()}, "
        f"executor protocol {EXECUTOR_PROTOCOL})",
    ]


def _lease(server: ApiServer, **fields: object) -> httpx.Response:
    body = {"executorId": "versions", "pool": "default", "nodes": NODES, **fields}
    return httpx.post(f"{server.url}/v1/executor/lease", json=body, headers=EXECUTOR_HEADERS, timeout=30)


def test_an_executor_of_the_previous_protocol_is_answered(server: ApiServer) -> None:
    previous = _lease(server)  # 0.9.0's call: no executorVersion, no protocol
    assert previous.status_code == 200, previous.text
    assert previous.json()["serverVersion"] == armada.__version__
    current = _lease(server, executorVersion=armada.__version__, protocol=EXECUTOR_PROTOCOL)
    assert current.status_code == 200, current.text
    assert current.json()["protocol"] == EXECUTOR_PROTOCOL


def test_an_executor_of_a_newer_protocol_is_told_which_field(server: ApiServer) -> None:
    newer = _lease(server, protocol=EXECUTOR_PROTOCOL + 1)
    assert newer.status_code == 400, newer.text
    assert newer.json()["field"] == "protocol"
