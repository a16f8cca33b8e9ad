"""The executor: serves one cluster, leasing jobs from the server and running them.

Public interface: ``run_executor`` (serve until cancelled), ``ExecutorSettings``, the
``ClusterBackend`` protocol its backends implement; the ``armada executor`` command is
:mod:`armada.cli.executor`. Exports load on first use: the server's settings name
``ExecutorSettings``, and must not pull in the lease loop and its HTTP client with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from armada.lazy import lazy_exports

if TYPE_CHECKING:
    from armada.executor.backend import ClusterBackend, FoundRun, RunObserver, RunStatus
    from armada.executor.runner import run_executor
    from armada.executor.settings import ExecutorSettings

__all__ = ["ClusterBackend", "ExecutorSettings", "FoundRun", "RunObserver", "RunStatus", "run_executor"]

__getattr__ = lazy_exports(
    __name__,
    {
        "ClusterBackend": "armada.executor.backend",
        "FoundRun": "armada.executor.backend",
        "RunObserver": "armada.executor.backend",
        "RunStatus": "armada.executor.backend",
        "run_executor": "armada.executor.runner",
        "ExecutorSettings": "armada.executor.settings",
    },
)
