"""Debian's Prometheus scrapes a live ``armada serve --dev`` (its in-process executor runs the
jobs) while jobs flow; every Grafana panel's query in deploy/grafana must then return data (a
finite value: a panel that shows nothing fails), and every alert's expression must evaluate.

One Prometheus and one server per session; a 1 s scrape interval keeps the run short.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.cluster import wait_for
from tests.prometheus import ALERTS, DASHBOARDS, PROMETHEUS, Stack, flow_jobs, panels, prometheus_stack, query


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if PROMETHEUS is None:
        pytest.skip("no prometheus (apt-get install prometheus)")
    with prometheus_stack(tmp_path_factory.mktemp("prometheus")) as running:
        flow_jobs(running)
        yield running


def _finite(data: dict[str, Any]) -> bool:
    result = data["result"]
    values = [item["value"][1] for item in result] if isinstance(result, list) else [result[1]]
    return any(math.isfinite(float(value)) for value in values)


@pytest.mark.parametrize("dashboard", DASHBOARDS, ids=[path.stem for path in DASHBOARDS])
def test_every_panel_of_the_dashboard_shows_data(stack: Stack, dashboard: Path) -> None:
    queries = [(title, expr) for title, targets in panels(dashboard) for expr, _ in targets]
    assert queries, f"{dashboard.name} has no panels"

    def empty() -> list[str]:
        return [f"{title}: {expr}" for title, expr in queries if not _finite(query(stack, expr))]

    # Scrapes and rates catch up with the jobs within a few scrape intervals.
    if empty():
        try:
            wait_for(lambda: not empty(), timeout=30, what="every panel to show data")
        except TimeoutError:
            raise AssertionError("panels without data:\n" + "\n".join(empty())) from None


def _rules(stack: Stack) -> list[dict[str, Any]]:
    groups = httpx.get(f"{stack.prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_every_alert_expression_evaluates(stack: Stack) -> None:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    expected = [rule for group in groups for rule in group["rules"]]
    for rule in expected:
        query(stack, rule["expr"])
    assert len(_rules(stack)) == len(expected)
    wait_for(
        lambda: all(rule["health"] == "ok" for rule in _rules(stack)),
        timeout=30,
        what="Prometheus to evaluate every rule without error",
    )
