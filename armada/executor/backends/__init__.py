"""Cluster backends: ``kubernetes``, ``process`` and ``fake``."""

from __future__ import annotations

from armada.executor.backend import ClusterBackend
from armada.executor.backends.fake import FakeBackend
from armada.executor.backends.kubernetes import KubernetesBackend
from armada.executor.backends.process import ProcessBackend
from armada.executor.settings import ExecutorSettings


def make_backend(settings: ExecutorSettings) -> ClusterBackend:
    """The backend ``settings.backend`` names."""
    retention = settings.finished_run_retention_seconds
    if settings.backend == "fake":
        return FakeBackend(settings.fake, settings.cluster_id)
    if settings.backend == "process":
        return ProcessBackend(settings.process, settings.cluster_id, retention)
    return KubernetesBackend(settings.kubernetes, retention)
