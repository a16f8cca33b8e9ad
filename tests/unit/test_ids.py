"""Job ids are lower-case ULIDs that decode to the time they were made."""

from __future__ import annotations

import time

from ulid import ULID

from armada.model.ids import new_job_id, new_job_ids


def test_job_ids_are_lower_case_ulids_of_now() -> None:
    before = time.time()
    ids = new_job_ids(1000)
    after = time.time()
    assert len(set(ids)) == 1000
    for job_id in ids:
        assert len(job_id) == 26
        assert job_id == job_id.lower()
        decoded = ULID.from_str(job_id.upper())
        assert before - 0.002 <= decoded.timestamp <= after + 0.002
        assert str(decoded).lower() == job_id
    assert ULID.from_str(new_job_id().upper())
