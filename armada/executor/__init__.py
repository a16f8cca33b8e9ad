"""The executor: serves one cluster, leasing jobs from the server and running them.

Public interface: ``run_executor`` (serve until cancelled), ``ExecutorSettings``, the
``armada executor`` command ``executor`` (in ``armada.executor.cli``) and the
``ClusterBackend`` protocol its backends implement.
"""

from armada.executor.backend import ClusterBackend, FoundRun, RunObserver, RunStatus
from armada.executor.runner import run_executor
from armada.executor.settings import ExecutorSettings

__all__ = ["ClusterBackend", "ExecutorSettings", "FoundRun", "RunObserver", "RunStatus", "run_executor"]
