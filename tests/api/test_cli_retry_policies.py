"""``armada retry-policy …`` and ``armada queue create|update --retry-policies``."""

from __future__ import annotations

import uuid
from pathlib import Path

from armada.client import ArmadaClient
from tests.api.cli import armada
from tests.servers import ApiServer

POLICY = """\
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: {name}
retryLimit: {limit}
defaultAction: Fail
rules:
  - action: Retry
    onCategory: transient
"""


def test_policy_commands_and_queue_attachment(
    server: ApiServer, client: ArmadaClient, tmp_path: Path
) -> None:
    name = f"p-{uuid.uuid4().hex[:8]}"
    file = tmp_path / "policy.yaml"
    file.write_text(POLICY.format(name=name, limit=2))
    assert (
        armada(server, "retry-policy", "create", "-f", str(file)).stdout.strip()
        == f"created retry policy {name}"
    )
    file.write_text(POLICY.format(name=name, limit=4))
    assert armada(server, "retry-policy", "update", "-f", str(file)).exit_code == 0
    shown = armada(server, "retry-policy", "get", name).stdout
    assert "retryLimit=4" in shown and "Retry on transient" in shown
    assert name in armada(server, "retry-policy", "list").stdout

    queue = f"q-{uuid.uuid4().hex[:8]}"
    assert armada(server, "queue", "create", queue, "--retry-policies", name).exit_code == 0
    assert client.get_queue(queue).retry_policies == [name]
    refused = armada(server, "retry-policy", "delete", name)
    assert refused.exit_code == 1 and queue in refused.stderr
    assert armada(server, "queue", "update", queue, "--retry-policies", "").exit_code == 0
    assert client.get_queue(queue).retry_policies == []
    assert armada(server, "retry-policy", "delete", name).exit_code == 0
    assert armada(server, "retry-policy", "get", name).exit_code == 1


def test_a_bad_policy_file_is_a_usage_error(server: ApiServer, tmp_path: Path) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text("name: x\nretries: 3\n")
    result = armada(server, "retry-policy", "create", "-f", str(file))
    assert result.exit_code == 2 and "retries" in result.stderr
