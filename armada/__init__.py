"""Armada: a multi-cluster batch job scheduler for Kubernetes, in one Python binary."""

__version__ = "0.10.0"
