"""Stream messages composed from serialized parts parse as the messages upstream's clients
expect: the same fields as building the protobuf objects by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from armada_client.armada import event_pb2, submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource
from google.protobuf.timestamp_pb2 import Timestamp

from armada.api.grpc import protowire
from armada.api.grpc.events import encode_message
from armada.api.grpc.jobs_proto import job_to_proto, timestamp_field
from armada.api.grpc.stored import decode_for_stream
from armada.model import events as ev
from armada.model.lifecycle import FailureCause
from tests.factories import RandomHistory, make_job

WHEN = datetime(2026, 11, 24, 3, 4, 5, 678_901, tzinfo=UTC)
STAMP = Timestamp(seconds=int(WHEN.timestamp()), nanos=678_901_000)
ENVELOPE = {"queue": "q", "job_set_id": "set", "job_id": "01job", "created": WHEN}


def _parsed(seq: int, event: ev.Event) -> event_pb2.EventStreamMessage:
    encoded = encode_message(seq, event)
    assert encoded is not None
    return event_pb2.EventStreamMessage.FromString(encoded)


def test_varint_and_field() -> None:
    assert [protowire.varint(n) for n in (0, 1, 127, 128, 300, 2**32)] == [
        b"\x00",
        b"\x01",
        b"\x7f",
        b"\x80\x01",
        b"\xac\x02",
        b"\x80\x80\x80\x80\x10",
    ]
    assert protowire.field(1, b"abc") == b"\x0a\x03abc"
    assert protowire.field(16, b"") == b"\x82\x01\x00"


def test_submitted_splices_the_job_and_its_pod_spec() -> None:
    job = make_job(
        job_id="01job", queue="q", job_set_id="set", client_id="c-1", priority=3, annotations={"a": "b"}
    )
    message = _parsed(42, ev.JobSubmitted(job=job, **ENVELOPE))  # type: ignore[arg-type]
    quantity = {"cpu": resource.Quantity(string="1"), "memory": resource.Quantity(string="1Gi")}
    requirements = core.ResourceRequirements(requests=quantity, limits=quantity)
    expected_job = submit_pb2.Job(
        id="01job",
        client_id="c-1",
        job_set_id="set",
        queue="q",
        namespace="default",
        owner="alice",
        priority=3,
        annotations={"a": "b"},
        pod_spec=core.PodSpec(
            containers=[
                core.Container(name="main", image="alpine", args=["sleep", "1"], resources=requirements)
            ]
        ),
        scheduling_resource_requirements=requirements,
    )
    expected = event_pb2.EventStreamMessage(
        id="42",
        message=event_pb2.EventMessage(
            submitted=event_pb2.JobSubmittedEvent(
                job_id="01job", job_set_id="set", queue="q", created=STAMP, job=expected_job
            )
        ),
    )
    assert message == expected
    assert job_to_proto(job) == expected_job  # job details read the same bytes


def test_failed_carries_cause_and_exit_codes() -> None:
    event = ev.JobFailed(reason="OOM", cause=FailureCause.OOM, exit_code=137, pod_name="p-0", **ENVELOPE)  # type: ignore[arg-type]
    expected = event_pb2.JobFailedEvent(
        job_id="01job",
        job_set_id="set",
        queue="q",
        created=STAMP,
        reason="OOM",
        cause=event_pb2.Cause.Value("OOM"),
        exit_codes={"p-0": 137},
        pod_name="p-0",
    )
    assert _parsed(7, event) == event_pb2.EventStreamMessage(
        id="7", message=event_pb2.EventMessage(failed=expected)
    )


def test_every_streamed_kind_parses_with_its_envelope() -> None:
    seen = set()
    for seq, event in enumerate(RandomHistory(seed=5).events(3000), start=1):
        encoded = encode_message(seq, event)
        if encoded is None:
            assert event.type not in event_pb2.EventMessage.DESCRIPTOR.fields_by_name
            continue
        message = event_pb2.EventStreamMessage.FromString(encoded)
        kind = message.message.WhichOneof("events")
        inner = getattr(message.message, kind)
        assert (message.id, inner.job_id, inner.job_set_id, inner.queue) == (
            str(seq),
            event.job_id,
            event.job_set_id,
            event.queue,
        )
        assert inner.created.ToDatetime(UTC) == event.created
        seen.add(kind)
    assert {"submitted", "queued", "leased", "running", "succeeded", "failed", "cancelled"} <= seen


def test_the_stream_reads_stored_events_into_the_same_messages() -> None:
    """Decoding for the stream (pod spec and requirements kept as raw JSON) changes no byte."""
    for seq, event in enumerate(RandomHistory(seed=11).events(2000), start=1):
        stored = decode_for_stream(ev.encode_event(event))
        assert type(stored).__struct_config__.tag == event.type
        assert encode_message(seq, stored) == encode_message(seq, event)


def test_a_stored_pod_spec_that_is_no_object_is_streamed_empty() -> None:
    """Raw JSON is only checked when converted: a bad stored spec empties that job's spec and
    requirements, and the stream goes on."""
    job = make_job(job_id="01odd", queue="q", job_set_id="set")
    stored = msgspec.json.decode(ev.encode_event(ev.JobSubmitted(job=job, **ENVELOPE)))  # type: ignore[arg-type]
    stored["job"].update(podSpec=[{"containers": []}], schedulingResourceRequirements=7)
    odd = msgspec.json.encode(stored)
    message = _parsed(3, decode_for_stream(odd))
    assert message.message.submitted.job.id == "01odd"
    assert message.message.submitted.job.pod_spec == core.PodSpec()
    assert message.message.submitted.job.scheduling_resource_requirements == core.ResourceRequirements()


def test_timestamps_are_composed_once_per_moment() -> None:
    """A request's events share their moment: the cached field is the protobuf one."""
    first = timestamp_field(4, WHEN)
    assert first == protowire.field(4, STAMP.SerializeToString())
    assert timestamp_field(4, WHEN.replace()) is first
    later = WHEN.replace(microsecond=0)
    assert Timestamp.FromString(timestamp_field(4, later)[2:]) == Timestamp(seconds=STAMP.seconds)
