"""Cluster backends: ``kubernetes``, ``process`` and ``fake``."""

from __future__ import annotations

from armada.executor.backend import ClusterBackend
from armada.executor.settings import ExecutorSettings


def make_backend(settings: ExecutorSettings) -> ClusterBackend:
    """The backend ``settings.backend`` names (imported lazily: each has its own needs)."""
    if settings.backend == "fake":
        from armada.executor.backends.fake import FakeBackend

        return FakeBackend(settings.fake, settings.cluster_id)
    if settings.backend == "process":
        from armada.executor.backends.process import ProcessBackend

        return ProcessBackend(settings.process, settings.cluster_id, settings.finished_run_retention_seconds)
    from armada.executor.backends.kubernetes import KubernetesBackend

    return KubernetesBackend(settings.kubernetes, settings.finished_run_retention_seconds)
