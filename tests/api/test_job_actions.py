"""Cancel, cancel a job set, reprioritize and preempt over real HTTP."""

from __future__ import annotations

import httpx
import pytest

from armada.client import ArmadaApiError, ArmadaClient
from tests.api.jobs import item, pod_spec, start
from tests.servers import ApiServer

PREEMPTIBLE = pod_spec(priorityClassName="armada-preemptible")


def event_types(client: ArmadaClient, queue: str, job_set_id: str, job_id: str) -> list[str]:
    return [e.event.type for e in client.job_set_events(queue, job_set_id) if e.event.job_id == job_id]


def test_cancelling_a_queued_job_cancels_it_at_once(client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    assert client.cancel_jobs(queue, "set", [job_id], reason="not needed") == [job_id]
    assert client.job_status([job_id]) == {job_id: "CANCELLED"}
    assert event_types(client, queue, "set", job_id) == ["submitted", "queued", "cancelling", "cancelled"]
    details = client.job_details([job_id])[job_id]
    assert (details.cancel_reason, details.cancel_user) == ("not needed", "anonymous")
    assert details.cancel_ts is not None
    # Cancelling a finished job does nothing.
    assert client.cancel_jobs(queue, "set", [job_id]) == []
    assert event_types(client, queue, "set", job_id)[-1] == "cancelled"


def test_cancelling_a_running_job_only_asks(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    run_id = start(server, queue, "set", job_id)
    response = httpx.post(
        f"{server.url}/v1/job/cancel", json={"queue": queue, "jobSetId": "set", "jobId": job_id}
    )
    assert response.json() == {"cancelledIds": [job_id]}
    assert client.job_status([job_id]) == {job_id: "RUNNING"}
    [last] = [e.event for e in client.job_set_events(queue, "set")][-1:]
    assert (last.type, last.run_id) == ("cancelling", run_id)


def test_cancel_without_ids_cancels_the_job_set(client: ArmadaClient, queue: str) -> None:
    ids = client.submit_jobs(queue, "set", [item(), item()])
    [other] = client.submit_jobs(queue, "other", [item()])
    assert sorted(client.cancel_jobs(queue, "set", [])) == sorted(ids)
    assert client.job_status([*ids, other]) == {ids[0]: "CANCELLED", ids[1]: "CANCELLED", other: "QUEUED"}


def test_unknown_and_foreign_ids_are_ignored(client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    assert client.cancel_jobs(queue, "another-set", [job_id, "nosuchjob"]) == []
    assert client.job_status([job_id]) == {job_id: "QUEUED"}


def test_job_set_cancel_filters_by_state(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    queued, running = client.submit_jobs(queue, "set", [item(), item()])
    start(server, queue, "set", running)
    assert client.cancel_job_set(queue, "set", ["QUEUED"]) == [queued]
    assert client.job_status([queued, running]) == {queued: "CANCELLED", running: "RUNNING"}
    # Upstream's integer enum values are accepted too: 2 is RUNNING.
    assert client.cancel_job_set(queue, "set", [2], reason="stop") == [running]


def test_job_set_cancel_rejects_unknown_states(client: ArmadaClient, queue: str) -> None:
    with pytest.raises(ArmadaApiError) as bad:
        client.cancel_job_set(queue, "set", ["SLEEPING"])
    assert (bad.value.status, bad.value.field) == (400, "filter.states[0]")


@pytest.mark.parametrize("path", ["/v1/job/cancel", "/v1/jobset/cancel", "/v1/job/preempt"])
def test_reasons_are_at_most_50_bytes(server: ApiServer, queue: str, path: str) -> None:
    body = {"queue": queue, "jobSetId": "set", "reason": "é" * 26}
    if path != "/v1/jobset/cancel":
        body["jobIds"] = ["x"]
    response = httpx.post(f"{server.url}{path}", json=body)
    assert response.status_code == 400
    assert response.json()["field"] == "reason"


def test_reprioritize_named_jobs_and_whole_job_sets(client: ArmadaClient, queue: str) -> None:
    first, second = client.submit_jobs(queue, "set", [item(), item()])
    client.cancel_jobs(queue, "set", [second])
    results = client.reprioritize_jobs(queue, "set", [first, second, "nosuchjob"], 5)
    assert results[first] == ""
    assert "finished" in results[second]
    assert results["nosuchjob"]
    assert event_types(client, queue, "set", first)[-2:] == ["reprioritizing", "reprioritized"]
    [third] = client.submit_jobs(queue, "set", [item()])
    assert client.reprioritize_jobs(queue, "set", [], 7) == {first: "", third: ""}
    details = client.job_details([first], expand_spec=True)
    assert details[first].job_spec is not None


def test_reprioritize_rejects_negative_priorities(client: ArmadaClient, queue: str) -> None:
    with pytest.raises(ArmadaApiError) as bad:
        client.reprioritize_jobs(queue, "set", [], -1)
    assert bad.value.field == "newPriority"


def test_preempt_only_running_preemptible_jobs(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    running, queued = client.submit_jobs(
        queue, "set", [item(pod_spec=PREEMPTIBLE), item(pod_spec=PREEMPTIBLE)]
    )
    run_id = start(server, queue, "set", running)
    assert client.preempt_jobs(queue, "set", [running, queued], reason="make room") == [running]
    last = [e.event for e in client.job_set_events(queue, "set")][-1]
    assert (last.type, last.job_id, last.run_id) == ("preempting", running, run_id)
    assert client.job_status([running, queued]) == {running: "RUNNING", queued: "QUEUED"}


def test_preempting_a_non_preemptible_job_is_refused(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    start(server, queue, "set", job_id)
    head = server.head()
    with pytest.raises(ArmadaApiError) as refused:
        client.preempt_jobs(queue, "set", [job_id])
    assert (refused.value.status, refused.value.field) == (400, "jobIds[0]")
    assert server.head() == head
