"""Prometheus metrics of the server (``GET /metrics``) and of executors, read from in-memory state."""
