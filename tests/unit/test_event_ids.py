"""Run event ids are unique: within a process, and in a child forked from it."""

from __future__ import annotations

import os
import re

from armada.model.leases import RunEvent, new_event_id


def test_event_ids_are_32_hex_digits_and_never_repeat() -> None:
    ids = [RunEvent(run_id="r", job_id="j", kind="pending").event_id for _ in range(10_000)]
    ids += [new_event_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch("[0-9a-f]{32}", event_id) for event_id in ids)


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write, new_event_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    parent = new_event_id()
    assert len(child) == 32
    assert child[:16] != parent[:16], "the child draws its own prefix"
