"""The append lock: lanes (urgent, prompt, bulk), FIFO within one, no starved lane,
cancellation never loses the lock."""

from __future__ import annotations

import asyncio

from armada.eventstore.writelock import Lane, WriteLock


async def take_turn(lock: WriteLock, order: list[str], name: str, lane: Lane = Lane.BULK) -> None:
    """Wait for ``lock`` in ``lane`` and note the turn in ``order``; the caller ends it."""
    await lock.acquire(lane)
    order.append(name)


async def test_urgent_waiters_overtake_queued_ones_and_order_is_kept_otherwise() -> None:
    lock = WriteLock()
    await lock.acquire()
    order: list[str] = []

    async def writer(name: str, lane: Lane = Lane.BULK) -> None:
        await take_turn(lock, order, name, lane)
        await asyncio.sleep(0)
        lock.release()

    tasks = [asyncio.create_task(writer(n)) for n in ("a", "b")]
    tasks.append(asyncio.create_task(writer("urgent", Lane.URGENT)))
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


async def test_prompt_waiters_are_handed_the_turn_before_bulk_ones_and_after_urgent_ones() -> None:
    lock = WriteLock()
    await lock.acquire()
    order: list[str] = []

    async def writer(name: str, lane: Lane) -> None:
        await take_turn(lock, order, name, lane)
        if not lock.hand_off():  # the next turn of the group, else unlock
            lock.release()

    tasks = [
        asyncio.create_task(writer(name, lane))
        for name, lane in [("bulk", Lane.BULK), ("prompt", Lane.PROMPT), ("urgent", Lane.URGENT)]
    ]
    await asyncio.sleep(0)
    assert lock.hand_off()  # a turn inside a group: lane order, whoever came first
    await asyncio.gather(*tasks)
    assert order == ["urgent", "prompt", "bulk"]
    assert not lock.locked()


async def test_a_hand_off_to_some_lanes_leaves_the_other_waiters_queued() -> None:
    lock = WriteLock()
    await lock.acquire()
    bulk = asyncio.create_task(lock.acquire(Lane.BULK))
    await asyncio.sleep(0)
    assert not lock.hand_off({Lane.URGENT, Lane.PROMPT})  # a closing group: nobody for it, so it commits
    assert lock.waiting(Lane.BULK) == 1 and not bulk.done()
    lock.release()
    await asyncio.wait_for(bulk, 1)


async def test_a_new_holder_is_urgent_else_prompt_but_a_bulk_waiter_passed_over_goes_next() -> None:
    lock = WriteLock()
    await lock.acquire()
    order: list[str] = []

    def writer(name: str, lane: Lane) -> asyncio.Task[None]:
        return asyncio.create_task(take_turn(lock, order, name, lane))

    bulk = [writer(f"bulk-{i}", Lane.BULK) for i in range(2)]
    await asyncio.sleep(0)
    prompts = [writer(f"prompt-{i}", Lane.PROMPT) for i in range(3)]
    await asyncio.sleep(0)
    lock.release()  # a group ended: a prompt writer starts the next, passing the bulk ones over
    await prompts[0]
    lock.release()  # ... so the bulk lane starts the one after: prompt writers cannot starve it
    await bulk[0]
    urgent = writer("urgent", Lane.URGENT)
    await asyncio.sleep(0)
    lock.release()
    await urgent  # urgent before anyone
    lock.release()
    await prompts[1]
    lock.release()
    await bulk[1]
    lock.release()
    await prompts[2]
    lock.release()
    assert order == ["prompt-0", "bulk-0", "urgent", "prompt-1", "bulk-1", "prompt-2"]
    assert not lock.locked()
