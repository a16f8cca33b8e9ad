"""The append lock: FIFO, urgent writers first, cancellation never loses the lock."""

from __future__ import annotations

import asyncio

from armada.eventstore.writelock import WriteLock


async def test_urgent_waiters_overtake_queued_ones_and_order_is_kept_otherwise() -> None:
    lock = WriteLock()
    await lock.acquire()
    order: list[str] = []

    async def writer(name: str, urgent: bool = False) -> None:
        await lock.acquire(urgent=urgent)
        order.append(name)
        await asyncio.sleep(0)
        lock.release()

    tasks = [asyncio.create_task(writer(n)) for n in ("a", "b")]
    tasks.append(asyncio.create_task(writer("urgent", urgent=True)))
    tasks.append(asyncio.create_task(writer("c")))
    await asyncio.sleep(0)
    lock.release()
    await asyncio.gather(*tasks)
    assert order == ["urgent", "a", "b", "c"]
    assert not lock.locked()


async def test_a_cancelled_waiter_neither_holds_nor_blocks_the_lock() -> None:
    lock = WriteLock()
    await lock.acquire()
    cancelled = asyncio.create_task(lock.acquire())
    behind = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    lock.release()
    await asyncio.wait_for(behind, 1)
    assert lock.locked()
    lock.release()
    assert not lock.locked()


async def test_a_waiter_cancelled_as_the_lock_is_handed_to_it_passes_it_on() -> None:
    lock = WriteLock()
    await lock.acquire()
    first = asyncio.create_task(lock.acquire())
    second = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    lock.release()  # hands the lock to ``first`` ...
    first.cancel()  # ... which is cancelled before it runs
    await asyncio.wait_for(second, 1)
    assert first.cancelled() and lock.locked()


async def test_busy_seconds_count_holds_including_the_current_one_and_hand_offs() -> None:
    lock = WriteLock()
    assert lock.busy_seconds == 0.0
    await lock.acquire()
    await asyncio.sleep(0.02)
    assert lock.busy_seconds >= 0.02  # the current hold counts
    waiter = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    lock.release()  # handed over: still busy
    await waiter
    await asyncio.sleep(0.02)
    lock.release()
    held = lock.busy_seconds
    assert held >= 0.04
    await asyncio.sleep(0.02)
    assert lock.busy_seconds == held  # idle time does not count
