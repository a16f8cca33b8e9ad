"""The job-set event stream: format, fromMessageId, watch, errorIfMissing, every event type."""

from __future__ import annotations

import threading
import time
from queue import Empty, Queue

import httpx
import msgspec
import pytest

from armada.client import ArmadaClient, StreamedEvent
from armada.model import events as ev
from armada.model.ids import new_run_id
from armada.model.lifecycle import FailureCause
from tests.api.jobs import item
from tests.servers import ApiServer


def test_lines_have_upstream_shape(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    response = httpx.post(f"{server.url}/v1/job-set/{queue}/set", json={})
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [msgspec.json.decode(line) for line in response.text.splitlines()]
    assert [list(line["result"]["message"]) for line in lines] == [["submitted"], ["queued"]]
    submitted = lines[0]["result"]["message"]["submitted"]
    assert (submitted["jobId"], submitted["jobSetId"], submitted["queue"]) == (job_id, "set", queue)
    assert submitted["job"]["id"] == job_id
    assert "created" in submitted
    ids = [int(line["result"]["id"]) for line in lines]
    assert ids == sorted(ids)


def test_from_message_id_is_exclusive(client: ArmadaClient, queue: str) -> None:
    client.submit_jobs(queue, "set", [item(), item()])
    everything = list(client.job_set_events(queue, "set"))
    assert len(everything) == 4
    after_second = list(client.job_set_events(queue, "set", from_message_id=everything[1].message_id))
    assert after_second == everything[2:]
    assert list(client.job_set_events(queue, "set", from_message_id=everything[-1].message_id)) == []


def test_without_watch_the_stream_ends_at_the_head(client: ArmadaClient, queue: str) -> None:
    client.submit_jobs(queue, "set", [item()])
    assert len(list(client.job_set_events(queue, "set"))) == 2
    assert list(client.job_set_events(queue, "empty-set")) == []


def test_watch_delivers_new_events(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    client.submit_jobs(queue, "set", [item()])
    received: Queue[StreamedEvent] = Queue()

    def follow() -> None:
        with ArmadaClient(server.url) as watcher:
            for streamed in watcher.job_set_events(queue, "set", watch=True):
                received.put(streamed)
                if streamed.event.type == "cancelled":
                    return

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    first = [received.get(timeout=10).event.type for _ in range(2)]
    assert first == ["submitted", "queued"]
    time.sleep(0.2)
    with pytest.raises(Empty):
        received.get_nowait()
    [job_id] = client.submit_jobs(queue, "set", [item()])
    assert [received.get(timeout=10).event.type for _ in range(2)] == ["submitted", "queued"]
    client.cancel_jobs(queue, "set", [job_id])
    assert [received.get(timeout=10).event.type for _ in range(2)] == ["cancelling", "cancelled"]
    thread.join(10)


def test_error_if_missing(server: ApiServer, queue: str) -> None:
    url = f"{server.url}/v1/job-set/{queue}/nothing-here"
    assert httpx.post(url, json={"errorIfMissing": True}).status_code == 404
    assert httpx.post(url, json={}).text == ""


@pytest.mark.parametrize(
    ("body", "field"),
    [({"fromMessageId": "abc"}, "fromMessageId"), ({"queue": "other"}, "queue"), ({"watch": "yes"}, "watch")],
)
def test_bad_stream_requests(server: ApiServer, queue: str, body: dict[str, object], field: str) -> None:
    response = httpx.post(f"{server.url}/v1/job-set/{queue}/set", json=body)
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_every_event_a_job_goes_through_is_streamed_in_order(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    first, second = new_run_id(), new_run_id()
    env = {"queue": queue, "job_set_id": "set", "job_id": job_id}
    server.append(
        [
            ev.JobReprioritizing(**env, new_priority=2),
            ev.JobReprioritized(**env, new_priority=2),
            ev.JobLeased(**env, run_id=first, cluster_id="c1", node_id="n1"),
            ev.JobLeaseReturned(**env, run_id=first, reason="no image", run_attempted=False),
            ev.JobQueued(**env, attempts=1),
            ev.JobLeased(**env, run_id=second, cluster_id="c1", node_id="n2"),
            ev.JobLeaseExpired(**env, run_id=second, cluster_id="c1"),
            ev.JobQueued(**env, attempts=2),
            ev.JobLeased(**env, run_id=first, cluster_id="c1", node_id="n1"),
            ev.JobPending(**env, run_id=first, node_name="n1", pod_name="p"),
            ev.JobRunning(**env, run_id=first, node_name="n1", pod_name="p"),
            ev.JobFailed(**env, run_id=first, reason="exit 1", cause=FailureCause.ERROR, retryable=True),
            ev.JobPreempting(**env, run_id=first, reason="urgent"),
            ev.JobPreempted(**env, run_id=first, preempting_job_id="other", reason="urgent"),
            ev.JobSucceeded(**env, run_id=first),
            ev.JobCancelling(**env, reason="done"),
            ev.JobCancelled(**env, reason="done"),
        ]
    )
    streamed = [s.event for s in client.job_set_events(queue, "set")]
    assert [e.type for e in streamed] == [
        "submitted",
        "queued",
        "reprioritizing",
        "reprioritized",
        "leased",
        "leaseReturned",
        "queued",
        "leased",
        "leaseExpired",
        "queued",
        "leased",
        "pending",
        "running",
        "failed",
        "preempting",
        "preempted",
        "succeeded",
        "cancelling",
        "cancelled",
    ]
    failed = streamed[13]
    assert isinstance(failed, ev.JobFailed)
    assert (failed.reason, failed.cause, failed.retryable) == ("exit 1", FailureCause.ERROR, True)
    preempted = streamed[15]
    assert isinstance(preempted, ev.JobPreempted)
    assert preempted.preempting_job_id == "other"


def test_a_retried_failure_is_streamed_as_a_retryable_failure(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    """In the log a retried run is ``leaseReturned`` with the decision; on the stream it is
    upstream's ``failed`` with ``retryable: true`` (then ``queued``). The job stays QUEUED."""
    [job_id] = client.submit_jobs(queue, "set", [item()])
    first, second = new_run_id(), new_run_id()
    env = {"queue": queue, "job_set_id": "set", "job_id": job_id}
    server.append(
        [
            ev.JobLeased(**env, run_id=first, cluster_id="c1", node_id="n1"),
            ev.JobLeaseReturned(
                **env,
                run_id=first,
                cluster_id="c1",
                reason="exit code 42; retry 1 of 2 by retry policy 'p' rule 0 (onCategory transient)",
                run_attempted=True,
                failure_category="transient",
                failure_subcategory="x",
                retry_policy="p",
                retry_rule=0,
                exit_code=42,
                node_name="n1",
            ),
            ev.JobQueued(
                **env, attempts=1, failure_retries=1, retry_policy="p", failure_category="transient"
            ),
            ev.JobLeased(**env, run_id=second, cluster_id="c1", node_id="n2"),
            ev.JobLeaseReturned(**env, run_id=second, cluster_id="c1", reason="node drained"),
            ev.JobQueued(**env, attempts=1),
        ]
    )
    streamed = [s.event for s in client.job_set_events(queue, "set")]
    assert [e.type for e in streamed][2:] == [
        "leased",
        "failed",
        "queued",
        "leased",
        "leaseReturned",
        "queued",
    ]
    failed = streamed[3]
    assert isinstance(failed, ev.JobFailed)
    assert (failed.run_id, failed.retryable, failed.exit_code, failed.node_name) == (first, True, 42, "n1")
    assert (failed.failure_category, failed.failure_subcategory, failed.retry_policy) == (
        "transient",
        "x",
        "p",
    )
    assert "retry 1 of 2" in failed.reason
    assert client.job_status([job_id]) == {job_id: "QUEUED"}
    raw = httpx.post(f"{server.url}/v1/job-set/{queue}/set", json={}).text.splitlines()
    assert msgspec.json.decode(raw[3])["result"]["message"]["failed"]["retryable"] is True
