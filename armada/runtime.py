"""Process-wide tuning for the long-running commands (``armada serve``, ``armada executor``).

CPython's cyclic garbage collector makes a full pass over every tracked object once enough
of them have survived younger passes. A server holding 100,000 jobs' state paused ~200 ms
for each, ~45 times a minute under load: a sixth of its time, stalling every request and
the append holding the write lock. Little of what these processes keep forms reference
cycles, so young passes run less often, full ones rarely, and what exists once started
up (modules, settings, the app) is left out of them.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: Allocations between young passes (CPython: 700), young passes per middle pass (10) and
#: middle passes per full pass (10). Measured on the e2e benchmark: GC time per run 11.5 s
#: -> 2.2 s, longest pause 307 ms -> 109 ms.
GC_THRESHOLDS = (10_000, 50, 100)


def tune_for_service() -> None:
    """Call once, when start-up is done and before serving."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run_service(main: Coroutine[Any, Any, T], *, spawns_processes: bool = False) -> T:
    """Run a service's main coroutine on uvloop when it is installed, as uvicorn runs the
    server's: a fake executor holding thousands of run timers spent a seventh of its CPU in
    the pure-Python loop (docs/performance-notes.md, "The executor path").

    Not when the service ``spawns_processes`` (the process backend): uvloop's spawn forks
    the whole process where asyncio's uses vfork, and starting ``date`` took twice as long
    (612 against 1,220 spawns/s here), the process backend's largest cost."""
    if spawns_processes:
        _wait_for_children_with_pidfds()
        return asyncio.run(main)
    try:
        import uvloop  # noqa: PLC0415 (optional: not on Windows)
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def _wait_for_children_with_pidfds() -> None:
    """Wait for child processes through the event loop, one pidfd each, as Python 3.12 does
    by default: 3.11 starts a thread per child to wait for it, which was a quarter of the
    process backend's CPU at ~300 runs/s (docs/performance-notes.md, "The process backend")."""
    if sys.version_info >= (3, 12):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):  # not Linux, or a kernel older than 5.3
        return
    asyncio.set_child_watcher(asyncio.PidfdChildWatcher())
