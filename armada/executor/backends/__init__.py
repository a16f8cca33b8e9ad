"""Cluster backends: ``kubernetes``, ``process`` and ``fake``.

Each backend is imported only when chosen: kubernetes-asyncio alone takes over a second
to import, which every ``armada serve`` and ``--backend fake`` start would otherwise pay.
"""

from __future__ import annotations

from armada.executor.backend import ClusterBackend
from armada.executor.settings import ExecutorSettings


def make_backend(settings: ExecutorSettings) -> ClusterBackend:
    """The backend ``settings.backend`` names."""
    retention = settings.finished_run_retention_seconds
    if settings.backend == "fake":
        from armada.executor.backends.fake import FakeBackend  # noqa: PLC0415 (lazy on purpose)

        return FakeBackend(settings.fake, settings.cluster_id, ingress=settings.ingress)
    if settings.backend == "process":
        from armada.executor.backends.process import ProcessBackend  # noqa: PLC0415

        return ProcessBackend(settings.process, settings.cluster_id, retention)
    from armada.executor.backends.kubernetes import KubernetesBackend  # noqa: PLC0415

    return KubernetesBackend(
        settings.kubernetes, retention, executor_id=settings.cluster_id, ingress=settings.ingress
    )
