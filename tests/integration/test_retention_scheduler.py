"""Pruning leaves the scheduler alone: its job db (no finished job) and fair share's usage history."""

from __future__ import annotations

import time

import msgspec

from armada.model.leases import RunEvent, RunEventBatch
from armada.services.retention import Pruner
from armada.services.settings import RetentionSettings
from tests.harness import Harness, report, submit


async def test_pruning_changes_neither_the_job_db_nor_the_usage_history(harness: Harness) -> None:
    h = harness
    h.scheduler.config = msgspec.structs.replace(h.scheduler.config, usage_half_life=600.0)
    await h.lease()
    done, busy = await submit(h, 2, cpu="2")
    await h.scheduler.cycle()
    leases = {lease.job_id: lease for lease in (await h.lease()).leases}
    await h.lease(runs=[report(lease.run_id, job) for job, lease in leases.items()])
    finished = [
        RunEvent(run_id=leases[done].run_id, job_id=done, kind="running"),
        RunEvent(run_id=leases[done].run_id, job_id=done, kind="succeeded"),
        RunEvent(run_id=leases[busy].run_id, job_id=busy, kind="running"),
    ]
    await h.intake.report(RunEventBatch(executor_id="c1", events=finished))
    h.clock.now += 30
    await h.scheduler.cycle()
    before = h.scheduler.scheduler_state.usage
    assert before.held and before.usage  # the running job holds a share, and has for 30 s
    jobs_before = sorted(h.follower.state.extras)

    # A heartbeat (still running the busy job): the newest event is not the finished job's.
    await h.lease(runs=[report(leases[busy].run_id, busy)])
    pruner = Pruner(h.database.store, RetentionSettings(expire_after="1h"), clock=lambda: time.time() + 7200)
    assert await pruner.prune_once() == 1
    assert (await h.job_states()) == {busy: "RUNNING"}

    h.clock.now += 30
    await h.scheduler.cycle()
    after = h.scheduler.scheduler_state.usage
    assert sorted(h.follower.state.extras) == jobs_before == [busy]
    assert after.usage == before.decayed(h.clock.now, h.scheduler.config.usage_half_life).usage
    assert after.held == before.held
