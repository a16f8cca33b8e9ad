"""Retries: what happens to a run that ended without a result — policies, the retry engine,
gang retries, node avoidance and each job's retry history.

The pure types live in :mod:`armada.model.retry` (and ``retry_engine``, ``retry_mutation``),
the tables in :mod:`armada.eventstore`, the routes in :mod:`armada.api` and :mod:`armada.cli`.
"""
