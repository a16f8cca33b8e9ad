"""Caps on log reads waiting at once, per caller and per executor (on this replica).

A log read holds a request, a mailbox row and, once answered, up to
``scheduler.maxLogBytes`` of lines: without a cap, one caller asking many times at once for
a chatty job's log multiplied that until the server ran out of memory and every other
caller waited. A read past a cap is refused before anything is posted; its slot is given
back when the read ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from armada.model.errors import LimitExceeded

#: Seconds a refused caller is told to wait: a log read usually ends well within it.
RETRY_AFTER = 2


class InFlight:
    """Counts what each key has in flight; refuses a key at ``limit``."""

    def __init__(self, limit: int, setting: str) -> None:
        self.limit = limit
        self.setting = setting
        self._held: dict[str, int] = {}

    @contextmanager
    def hold(self, key: str, who: str) -> Iterator[None]:
        """One slot of ``key``'s for the ``with`` block; :class:`LimitExceeded` at the cap."""
        if self._held.get(key, 0) >= self.limit:
            raise LimitExceeded(
                f"{who} already has {self.limit} log reads waiting ({self.setting}); "
                f"try again in {RETRY_AFTER} s",
                retry_after=RETRY_AFTER,
            )
        self._held[key] = self._held.get(key, 0) + 1
        try:
            yield
        finally:
            if (left := self._held.pop(key) - 1) > 0:
                self._held[key] = left

    def held(self, key: str) -> int:
        return self._held.get(key, 0)
