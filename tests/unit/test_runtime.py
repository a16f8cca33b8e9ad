"""Service processes tune the garbage collector for large, long-lived state."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from armada.runtime import GC_THRESHOLDS, run_service, tune_for_service


@pytest.fixture
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


@pytest.mark.usefixtures("restore_gc")
def test_services_collect_young_objects_less_often_and_leave_startup_state_alone() -> None:
    started_up = [object() for _ in range(10)]
    tune_for_service()
    assert gc.get_threshold() == GC_THRESHOLDS
    assert GC_THRESHOLDS[0] > 700, "fewer young passes than CPython's default"
    assert gc.get_freeze_count() >= len(started_up), "what exists at start-up is frozen"


def test_a_service_runs_on_uvloop_when_it_is_installed() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def loop_type() -> type:
        return type(asyncio.get_running_loop())

    assert run_service(loop_type()) is uvloop.Loop


def test_a_service_that_spawns_processes_keeps_asyncios_loop() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def loop_type() -> type:
        return type(asyncio.get_running_loop())

    assert run_service(loop_type(), spawns_processes=True) is not uvloop.Loop
