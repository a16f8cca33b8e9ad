"""Retry policies end to end: a real server, a process executor, real exit codes.

One server and one executor serve the whole module (each test uses its own job set): the
executor names exit 3 ``user-error``, exit 42 ``transient`` and exit 137 ``memory``; the
queue's policy fails the first at once, retries the second twice, and retries the third
twice with twice the memory each time.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from armada.client import ArmadaClient
from armada.model import events as ev
from tests.e2e.cluster import (
    FAST_SERVER_ENV,
    event_types,
    executor,
    fake_nodes,
    gang,
    job,
    states_are,
    wait_for,
)
from tests.processes import Server, armada_command, process_env, running_server

CATEGORIES = {
    "categories": [
        {"name": "user-error", "rules": [{"onExitCodes": {"operator": "In", "values": [3]}}]},
        {"name": "memory", "rules": [{"onExitCodes": {"operator": "In", "values": [137]}}]},
        {
            "name": "transient",
            "action": "Delete",
            "rules": [{"onExitCodes": {"operator": "In", "values": [42]}}],
        },
    ]
}
POLICY = {
    "name": "standard",
    "retryLimit": 2,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Retry", "onCategory": "transient"},
        {"action": "Retry", "onCategory": "memory", "mutate": {"resources": {"memory": {"factor": 2}}}},
    ],
}
ENGINE = {"enabled": True, "globalMaxRetries": 5}


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, ArmadaClient]]:
    tmp = tmp_path_factory.mktemp("retries")
    env = {**FAST_SERVER_ENV, "ARMADA_SCHEDULING_RETRY_POLICY": json.dumps(ENGINE)}
    executor_env = {"ARMADA_EXECUTOR_ERROR_CATEGORIES": json.dumps(CATEGORIES)}
    with (
        running_server(tmp, env=env) as server,
        ArmadaClient(server.url) as client,
        executor(tmp, server.url, "local", backend="process", args=("--process-cpu", "4"), env=executor_env),
    ):
        assert httpx.post(f"{server.url}/v1/retry-policy", json=POLICY).status_code == 200
        queue = {"name": "q", "retryPolicies": ["standard"]}
        assert httpx.post(f"{server.url}/v1/queue", json=queue).status_code == 200
        yield server, client


def _failures(client: ArmadaClient, job_set: str, job_id: str) -> list[ev.JobFailed]:
    """The job's ``failed`` events: retried failures (``retryable``), then any final one."""
    events = client.job_set_events("q", job_set)
    return [e.event for e in events if e.event.job_id == job_id and isinstance(e.event, ev.JobFailed)]


def _failed(client: ArmadaClient, job_set: str, job_id: str) -> ev.JobFailed:
    """The job's final failure."""
    *retried, failed = _failures(client, job_set, job_id)
    assert all(f.retryable for f in retried) and not failed.retryable
    return failed


def test_user_error_fails_at_once_and_transient_retries_twice_then_fails(
    system: tuple[Server, ArmadaClient],
) -> None:
    _, client = system
    user, transient = client.submit_jobs("q", "a", [job("exit 3"), job("exit 42")])
    wait_for(states_are(client, [user, transient], "FAILED"), timeout=90, what="both jobs to fail")

    assert event_types(client, "q", "a", user).count("leased") == 1
    failed = _failed(client, "a", user)
    assert (failed.failure_category, failed.exit_code, failed.retryable) == ("user-error", 3, False)
    assert "says Fail" in failed.reason

    # Upstream's stream: each retried run is ``failed`` with ``retryable: true``, then ``queued``.
    types = event_types(client, "q", "a", transient)
    assert types.count("leased") == 3 and types.count("failed") == 3 and "leaseReturned" not in types, types
    assert types[types.index("failed") + 1] == "queued", types
    failures = _failures(client, "a", transient)
    assert [(f.retryable, f.exit_code, f.failure_category, f.retry_policy) for f in failures] == [
        (True, 42, "transient", "standard"),
        (True, 42, "transient", "standard"),
        (False, 42, "transient", "standard"),
    ]
    assert "retry 2 of 2 by retry policy 'standard' rule 1 (onCategory transient)" in failures[1].reason
    assert "retryLimit 2 reached" in failures[2].reason

    [details] = client.job_details([transient], expand_runs=True).values()
    reasons = [run.reason for run in details.job_runs]
    assert sum("by retry policy 'standard' rule 1 (onCategory transient)" in r for r in reasons) == 2, reasons
    _history_on_every_surface(system[0], client, transient)

    metrics = httpx.get(f"{system[0].url}/metrics").text
    assert 'armada_scheduler_retry_policy_decisions_total{decision="retry",policy="standard"} 2.0' in metrics
    assert 'armada_scheduler_retries_total{category="transient",queue="q"} 2.0' in metrics
    assert 'armada_scheduler_retry_policy_decisions_total{decision="fail",policy="standard"}' in metrics


def _history_on_every_surface(server: Server, client: ArmadaClient, job_id: str) -> None:
    """The same history in REST job details, the job's scheduler report and ``armada job details``."""
    history = client.job_details([job_id], expand_runs=True)[job_id].retry_history
    assert history is not None and (history.retries_granted, history.retry_policy) == (2, "standard")
    decided = [
        (a.outcome, a.failure_category, a.decision, a.retry_rule, a.retries_used) for a in history.attempts
    ]
    assert decided == [
        ("failed", "transient", "Retry", 1, 1),
        ("failed", "transient", "Retry", 1, 2),
        ("failed", "transient", "Fail", 1, 2),
    ]
    assert "retryLimit 2 reached" in history.attempts[-1].reason
    report = client.job_report(job_id)
    assert report.retries == history
    assert "Retries: 2 granted by retry policy 'standard', 3 attempts" in report.report
    assert "Fail by 'standard' rule 1" in report.report
    shown = subprocess.run(
        armada_command("job", "details", job_id, "--url", server.url),
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "Retries: 2 granted by retry policy 'standard', 3 attempts" in shown
    assert shown.count("Retry by 'standard' rule 1") == 2 and "category transient" in shown


def test_fail_fast_bypasses_the_engine(system: tuple[Server, ArmadaClient]) -> None:
    _, client = system
    [fast] = client.submit_jobs("q", "b", [job("exit 42", annotations={"armadaproject.io/failFast": "true"})])
    wait_for(states_are(client, [fast], "FAILED"), timeout=60, what="the fail-fast job to fail")
    assert event_types(client, "q", "b", fast).count("leased") == 1
    assert "failFast" in _failed(client, "b", fast).reason


def test_retried_job_can_succeed(system: tuple[Server, ArmadaClient], tmp_path: Path) -> None:
    _, client = system
    marker = tmp_path / "tried"
    command = f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 42"
    [flaky] = client.submit_jobs("q", "c", [job(command)])
    wait_for(states_are(client, [flaky], "SUCCEEDED"), timeout=60, what="the flaky job to succeed on retry")
    types = event_types(client, "q", "c", flaky)
    assert types.count("failed") == 1 and types[-1] == "succeeded", types
    assert [f.retryable for f in _failures(client, "c", flaky)] == [True]


def test_an_oom_like_failure_grows_memory_on_each_retry(system: tuple[Server, ArmadaClient]) -> None:
    _, client = system
    [hungry] = client.submit_jobs("q", "d", [job("exit 137", memory="64Mi")])
    wait_for(states_are(client, [hungry], "FAILED"), timeout=90, what="the hungry job to use its retries")
    assert event_types(client, "q", "d", hungry).count("leased") == 3
    [details] = client.job_details([hungry], expand_spec=True).values()
    assert details.job_spec is not None
    resources = details.job_spec.pod_spec["containers"][0]["resources"]
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == str(4 * 64 * 2**20)
    assert _failed(client, "d", hungry).failure_category == "memory"
    history = client.job_details([hungry], expand_runs=True)[hungry].retry_history
    assert history is not None
    assert [a.mutations for a in history.attempts] == [
        ["memory 64Mi -> 128Mi"],
        ["memory 128Mi -> 256Mi"],
        [],
    ]


def test_a_gang_member_failing_retryably_restarts_the_whole_gang(
    system: tuple[Server, ArmadaClient], tmp_path: Path
) -> None:
    """First run: one member (whoever takes the lock) exits 42, the others would run long;
    the gang restarts as a whole and every member then succeeds."""
    _, client = system
    marker, lock = tmp_path / "failed-once", tmp_path / "lock"
    command = (
        f"if [ -e {marker} ]; then exit 0; fi; "
        f"if mkdir {lock} 2>/dev/null; then sleep 1; touch {marker}; exit 42; fi; sleep 120"
    )
    members = client.submit_jobs("q", "e", gang(4, command, "g-e2e", cpu="1", memory="16Mi"))
    wait_for(states_are(client, members, "SUCCEEDED"), timeout=90, what="the whole gang to succeed")
    failures = [f for member in members for f in _failures(client, "e", member)]
    assert [f.retryable for f in failures] == [True], "one member failed, retryably; no other failed"
    for member in members:
        assert event_types(client, "q", "e", member).count("leased") == 2
    reasons = [
        e.event.reason for e in client.job_set_events("q", "e") if isinstance(e.event, ev.JobLeaseReturned)
    ]
    assert sum(r.startswith("gang-member-failed") for r in reasons) == 3, reasons


def test_avoid_same_node_on_two_fake_nodes(tmp_path: Path) -> None:
    """A node-specific failure moves the retry to the other node; with no node left the job
    fails with the scheduler's reason."""
    categories = {
        "categories": [{"name": "node", "rules": [{"onExitCodes": {"operator": "In", "values": [7]}}]}]
    }
    policy = {
        "name": "move",
        "retryLimit": 5,
        "rules": [{"action": "Retry", "onCategory": "node", "mutate": {"affinity": {"avoidSameNode": True}}}],
    }
    env = {**FAST_SERVER_ENV, "ARMADA_SCHEDULING_RETRY_POLICY": json.dumps(ENGINE)}
    with (
        running_server(tmp_path, env=env) as server,
        ArmadaClient(server.url) as client,
        executor(
            tmp_path,
            server.url,
            "fake",
            args=fake_nodes(2),
            env={"ARMADA_EXECUTOR_ERROR_CATEGORIES": json.dumps(categories)},
        ),
    ):
        assert httpx.post(f"{server.url}/v1/retry-policy", json=policy).status_code == 200
        assert (
            httpx.post(f"{server.url}/v1/queue", json={"name": "q", "retryPolicies": ["move"]}).status_code
            == 200
        )
        [moving] = client.submit_jobs("q", "f", [job("exit 7")])
        wait_for(states_are(client, [moving], "FAILED"), timeout=60, what="the job to run out of nodes")
        nodes = [
            e.event.node_id for e in client.job_set_events("q", "f") if isinstance(e.event, ev.JobLeased)
        ]
        assert len(nodes) == 2 and len(set(nodes)) == 2, nodes
        assert [f.retryable for f in _failures(client, "f", moving)] == [True, True, False]
        history = client.job_details([moving], expand_runs=True)[moving].retry_history
        assert history is not None
        first, second, rejected = history.attempts
        assert first.mutations == [f"avoid node {nodes[0]}"] and second.mutations == [
            f"avoid node {nodes[1]}"
        ]
        assert (rejected.outcome, rejected.run_id) == ("rejected", "")
