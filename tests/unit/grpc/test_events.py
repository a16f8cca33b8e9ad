"""Stream messages of ``api.Event``: a retried failure is upstream's ``JobFailedEvent`` with
``retryable`` set, built from the log's ``leaseReturned`` by the shared stream translation."""

from __future__ import annotations

from armada_client.armada import event_pb2

from armada.api.grpc.events import encode_message
from armada.eventstore.recent import StoredEvent
from armada.model import events as ev
from armada.services.streams import as_streamed

ENV = {"queue": "q", "job_set_id": "s", "job_id": "j", "run_id": "r"}


def event_message(seq: int, event: ev.Event) -> event_pb2.EventStreamMessage | None:
    """The message a stream sends for ``event``, as the client parses it."""
    encoded = encode_message(seq, event)
    return None if encoded is None else event_pb2.EventStreamMessage.FromString(encoded)


def test_a_retried_failure_is_a_retryable_job_failed_event() -> None:
    returned = ev.JobLeaseReturned(
        **ENV, cluster_id="c1", reason="retried", failure_category="oom", retry_policy="p", exit_code=137
    )
    message = event_message(7, as_streamed(StoredEvent(7, returned)).event)
    assert message is not None and message.id == "7"
    failed = message.message.failed
    assert (failed.job_id, failed.retryable, failed.failure_category, failed.reason) == (
        "j",
        True,
        "oom",
        "retried",
    )
    assert dict(failed.exit_codes) == {"main": 137}


def test_a_plain_returned_lease_stays_a_returned_lease() -> None:
    returned = ev.JobLeaseReturned(**ENV, cluster_id="c1", reason="node drained")
    assert as_streamed(StoredEvent(1, returned)).event is returned
    message = event_message(1, returned)
    assert message is not None and message.message.WhichOneof("events") == "lease_returned"
