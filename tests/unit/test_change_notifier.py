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
