"""Event encoding: every type round-trips, and stored events survive schema evolution."""

from __future__ import annotations

import msgspec
import pytest

from armada.model import events as ev
from armada.model.lifecycle import JOB_STATE_AFTER, JobState
from tests.factories import RandomHistory, make_job


def test_every_event_type_round_trips() -> None:
    seen: set[str] = set()
    for event in RandomHistory(seed=3).events(2000):
        assert ev.decode_event(ev.encode_event(event)) == event
        seen.add(event.type)
    all_types = {cls.__struct_config__.tag for cls in ev.AnyEvent.__args__}  # type: ignore[attr-defined]
    assert seen == all_types


def test_wire_names_are_camel_case_with_a_type_tag() -> None:
    job = make_job()
    encoded = msgspec.json.decode(
        ev.encode_event(ev.JobSubmitted(queue="q", job_set_id="s", job_id=job.id, job=job))
    )
    assert encoded["type"] == "submitted"
    assert encoded["jobSetId"] == "s"
    assert encoded["job"]["jobSetId"] == job.job_set_id
    assert "runId" not in encoded  # defaults are omitted


def test_old_payloads_decode_with_defaults_and_new_fields_are_ignored() -> None:
    old = b'{"type":"failed","created":"2025-01-01T00:00:00Z","jobId":"j","queue":"q","jobSetId":"s"}'
    failed = ev.decode_event(old)
    assert isinstance(failed, ev.JobFailed)
    assert (failed.exit_code, failed.retryable, failed.cause) == (None, False, ev.FailureCause.ERROR)
    newer = old[:-1] + b',"fieldFromTheFuture":1}'
    assert ev.decode_event(newer) == failed


def test_unknown_event_types_are_rejected_loudly() -> None:
    with pytest.raises(msgspec.ValidationError):
        ev.decode_event(b'{"type":"teleported","created":"2025-01-01T00:00:00Z"}')


def test_job_states_follow_their_events() -> None:
    assert JOB_STATE_AFTER["submitted"] is JobState.QUEUED
    assert JOB_STATE_AFTER["leased"].active and not JOB_STATE_AFTER["queued"].active
    assert all(JOB_STATE_AFTER[t].terminal for t in ("succeeded", "failed", "cancelled", "preempted"))
    assert "cancelling" not in JOB_STATE_AFTER and "leaseReturned" not in JOB_STATE_AFTER
