"""``scheduling.retryPolicy.defaultPolicyName`` naming no policy: the server starts (policies
are created through it), warns, and ``armada admin check`` reports it until the policy exists."""

from __future__ import annotations

import json
from pathlib import Path

from armada.client import ArmadaClient
from armada.model.retry import RetryPolicy
from tests.databases import sqlite_url
from tests.faults.workload import admin_check
from tests.processes import running_server

ENGINE = {"ARMADA_SCHEDULING_RETRY_POLICY": json.dumps({"enabled": True, "defaultPolicyName": "fleet"})}


def test_a_missing_default_policy_is_warned_about_and_reported_until_created(tmp_path: Path) -> None:
    database_url = sqlite_url(tmp_path)
    with running_server(tmp_path, database_url=database_url, env=ENGINE) as server:
        assert "retry policy 'fleet' does not exist" in server.process.log()
        missing = admin_check(database_url, ENGINE)
        assert missing.returncode == 1, missing.stdout + missing.stderr
        named = "scheduling.retryPolicy.defaultPolicyName: retry policy 'fleet' does not exist"
        assert named in missing.stdout
        assert admin_check(database_url).returncode == 0, "engine off: nothing to report"
        with ArmadaClient(server.url) as armada:
            armada.create_retry_policy(RetryPolicy(name="fleet", retry_limit=1))
        present = admin_check(database_url, ENGINE)
        assert present.returncode == 0, present.stdout + present.stderr
