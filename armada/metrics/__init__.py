"""Prometheus metrics of the server (``GET /metrics``) and of executors, read from in-memory state."""

from prometheus_client import disable_created_metrics

# No ``*_created`` sample beside every counter and histogram: Prometheus stores each as one
# more series (a third more in all) and nothing here reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]
