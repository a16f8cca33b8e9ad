"""Who announces a commit: this process's own appends are published by the appender."""

from __future__ import annotations

import asyncio

from armada.eventstore.notify import ChangeNotifier


async def test_a_notification_of_the_group_being_committed_waits_for_its_appender() -> None:
    notifier = ChangeNotifier(head=4)
    waiter = asyncio.ensure_future(notifier.wait(4))
    notifier.committing(9)
    notifier.heard(9)  # PostgreSQL's NOTIFY of this process's own commit, first
    await asyncio.sleep(0)
    assert notifier.head == 4 and not waiter.done()
    notifier.publish(9)  # the appender, its events held in memory
    notifier.committed()
    assert await waiter == 9


async def test_a_notification_beyond_the_group_being_committed_is_passed_on() -> None:
    notifier = ChangeNotifier(head=4)
    notifier.committing(9)
    notifier.heard(12)
    assert notifier.head == 12


async def test_what_was_withheld_is_passed_on_when_the_group_fails() -> None:
    notifier = ChangeNotifier(head=4)
    notifier.committing(9)
    notifier.heard(6)  # not this group's (it never committed): another replica's, say
    assert notifier.head == 4
    notifier.committed()  # rolled back: nothing published by the appender
    assert notifier.head == 6
    notifier.heard(8)  # no group of this process is committing any more
    assert notifier.head == 8


async def test_a_job_set_stream_wakes_only_for_commits_touching_its_job_set() -> None:
    notifier = ChangeNotifier(head=4)
    mine = asyncio.ensure_future(notifier.wait_job_set(("q", "a"), 4, timeout=5, rewinds=0))
    notifier.publish(6, first=5, job_sets={("q", "b")})
    await asyncio.sleep(0)
    assert not mine.done() and not notifier.job_sets.since(("q", "a"), 4)
    notifier.publish(9, first=7, job_sets={("q", "a"), ("q", "b")})
    assert await mine == 9
    assert notifier.job_sets.since(("q", "a"), 6) and not notifier.job_sets.since(("q", "a"), 9)


async def test_a_commit_whose_job_sets_are_unknown_wakes_every_job_set_stream() -> None:
    notifier = ChangeNotifier(head=4)
    waiting = [
        asyncio.ensure_future(notifier.wait_job_set(("q", name), 4, timeout=5, rewinds=0)) for name in "ab"
    ]
    notifier.heard(7)  # another replica's commit
    assert await asyncio.gather(*waiting) == [7, 7]
    assert notifier.job_sets.since(("q", "c"), 6)


async def test_an_own_commit_after_an_unheard_one_counts_as_unknown() -> None:
    notifier = ChangeNotifier(head=4)
    notifier.publish(9, first=7, job_sets={("q", "b")})  # 5 and 6 were another replica's
    assert notifier.job_sets.since(("q", "a"), 4) and notifier.job_sets.since(("q", "a"), 8)
    assert not notifier.job_sets.since(("q", "a"), 9)


async def test_a_rewind_wakes_job_set_streams() -> None:
    notifier = ChangeNotifier(head=9)
    waiter = asyncio.ensure_future(notifier.wait_job_set(("q", "a"), 9, timeout=5, rewinds=0))
    await asyncio.sleep(0)
    notifier.rewind(5)
    assert await waiter == 5
