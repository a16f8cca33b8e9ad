"""Job ids are lower-case ULIDs that decode to the time they were made."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from ulid import ULID

from armada.model import ids
from armada.model.ids import minted_at, new_job_id, new_job_ids, new_run_id, time_prefix


@pytest.mark.parametrize("count", [1, 8, 9, 1000])  # few are encoded in Python, more with numpy
def test_job_ids_are_lower_case_ulids_of_now(count: int) -> None:
    before = time.time()
    job_ids = new_job_ids(count)
    after = time.time()
    assert len(set(job_ids)) == count
    for job_id in job_ids:
        assert len(job_id) == 26
        assert job_id == job_id.lower()
        decoded = ULID.from_str(job_id.upper())
        assert before - 0.002 <= decoded.timestamp <= after + 0.002
        assert str(decoded).lower() == job_id
    assert ULID.from_str(new_job_id().upper())


def test_run_ids_are_the_uuid_form_of_ulids_of_now() -> None:
    before = time.time()
    run_ids = [new_run_id() for _ in range(100)]
    after = time.time()
    for run_id in run_ids:
        assert str(uuid.UUID(run_id)) == run_id
        decoded = ULID.from_uuid(uuid.UUID(run_id))
        assert str(decoded.to_uuid()) == run_id
        assert before - 0.002 <= decoded.timestamp <= after + 0.002
    assert len(set(run_ids)) == 100


def test_ids_sort_in_creation_order_even_within_a_millisecond() -> None:
    job_ids = [job_id for _ in range(200) for job_id in new_job_ids(10)] + [new_job_id() for _ in range(500)]
    assert job_ids == sorted(job_ids) and len(set(job_ids)) == len(job_ids)
    run_ids = [new_run_id() for _ in range(2000)]
    assert run_ids == sorted(run_ids)


def test_random_parts_differ_across_many_calls() -> None:
    """The randomness fetched ahead is used up and fetched again, never reused."""
    counter = ids._Counter()
    parts = [counter.random_part() for _ in range(1500)]  # the pool holds 400
    assert len(set(parts)) == 1500
    assert all(0 <= part < 1 << 79 for part in parts)


def test_time_prefixes_and_minted_at_read_the_ulid_time() -> None:
    moment = datetime(2026, 3, 1, 12, 0, 0, 999_999, tzinfo=UTC)
    job_id = str(ULID.from_datetime(moment)).lower()
    assert minted_at(job_id) == minted_at(job_id.upper()) == moment.replace(microsecond=999_000)
    assert job_id.startswith(time_prefix(moment))
    assert (
        time_prefix(moment - timedelta(milliseconds=1))
        < job_id
        < time_prefix(moment + timedelta(milliseconds=1))
    )


def test_ids_minted_at_an_earlier_time_stay_above_the_last_id() -> None:
    """After a clock step back the ids keep counting up in the last id's millisecond."""
    last = new_job_id()
    later = new_job_ids(20, datetime.now(UTC) - timedelta(minutes=5))
    assert later == sorted(later) and later[0] > last
    assert {minted_at(job_id) for job_id in later} == {minted_at(last)}
