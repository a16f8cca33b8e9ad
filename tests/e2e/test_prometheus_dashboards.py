"""Debian's Prometheus scrapes a live ``armada serve --dev`` (its in-process executor runs the
jobs) while jobs flow; every Grafana panel's query in deploy/grafana must then return data (a
finite value: a panel that shows nothing fails), and every alert's expression must evaluate.

One Prometheus and one server per session; a 1 s scrape interval keeps the run short.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from armada.client import ArmadaApiError, ArmadaClient
from armada.model.queues import Queue
from tests.e2e.cluster import job, states_are, wait_for
from tests.processes import ROOT, free_port, running_server

DASHBOARDS = sorted((ROOT / "deploy" / "grafana").glob("*.json"))
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yaml"


@dataclass
class Stack:
    prometheus: str
    server: str


def panel_queries(path: Path) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of every panel."""
    dashboard = json.loads(path.read_text())
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]


def _query(stack: Stack, expr: str) -> dict[str, Any]:
    response = httpx.get(f"{stack.prometheus}/api/v1/query", params={"query": expr}, timeout=10)
    body: dict[str, Any] = response.json()
    assert body["status"] == "success", f"{expr}: {body}"
    return body


def _finite(body: dict[str, Any]) -> bool:
    result = body["data"]["result"]
    values = [item["value"][1] for item in result] if isinstance(result, list) else [result[1]]
    return any(math.isfinite(float(value)) for value in values)


def _flow_jobs(stack: Stack) -> None:
    """Jobs that finish in batches, each seen by a scrape before the next (so counters and
    histograms move between samples: rates and quantiles have data), two jobs that keep
    running, and one unknown job looked up (a 404 for the error panel)."""
    succeeded = 'sum(armada_scheduler_job_state_counter_by_queue_total{state="succeeded"})'

    def scraped(count: int) -> Callable[[], bool]:
        def check() -> bool:
            result = _query(stack, succeeded)["data"]["result"]
            return bool(result) and float(result[0]["value"][1]) == count

        return check

    with ArmadaClient(stack.server) as client:
        client.create_queue(Queue(name="obs"))
        # Small requests: the dev executor's node is this host (two cores here).
        running = client.submit_jobs("obs", "long", [job("sleep 600", cpu="100m") for _ in range(2)])
        finished: list[str] = []
        for _ in range(3):
            finished += client.submit_jobs("obs", "short", [job("true", cpu="100m") for _ in range(3)])
            wait_for(states_are(client, finished, "SUCCEEDED"), what="short jobs to succeed")
            wait_for(scraped(len(finished)), what="Prometheus to scrape the batch")
        wait_for(states_are(client, running, "RUNNING"), what="long jobs to run")
        with pytest.raises(ArmadaApiError):
            client.job_report("01h0000000000000000000000")


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.skip("no prometheus (apt-get install prometheus)")
    tmp = tmp_path_factory.mktemp("prometheus")
    env = {"ARMADA_EXECUTOR_PROCESS": json.dumps({"stateDir": str(tmp / "executor")})}
    with running_server(tmp, "--dev", env=env) as server:
        target = server.url.removeprefix("http://")
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(ALERTS)],
            "scrape_configs": [{"job_name": "armada", "static_configs": [{"targets": [target]}]}],
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = free_port()
        command = [
            prometheus,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        with (tmp / "prometheus.log").open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            stack = Stack(f"http://127.0.0.1:{port}", server.url)
            wait_for(lambda: _up(stack), what="Prometheus to scrape the server")
            _flow_jobs(stack)
            yield stack
        finally:
            process.terminate()
            process.wait(timeout=30)


def _up(stack: Stack) -> bool:
    try:
        response = httpx.get(f"{stack.prometheus}/api/v1/query", params={"query": "up"}, timeout=5)
    except httpx.HTTPError:
        return False
    if response.status_code != 200:  # 503 while its storage opens
        return False
    return [item["value"][1] for item in response.json()["data"]["result"]] == ["1"]


@pytest.mark.parametrize("dashboard", DASHBOARDS, ids=[path.stem for path in DASHBOARDS])
def test_every_panel_of_the_dashboard_shows_data(stack: Stack, dashboard: Path) -> None:
    queries = panel_queries(dashboard)
    assert queries, f"{dashboard.name} has no panels"

    def empty() -> list[str]:
        return [f"{title}: {expr}" for title, expr in queries if not _finite(_query(stack, expr))]

    # Scrapes and rates catch up with the jobs within a few scrape intervals.
    missing = empty()
    if missing:
        try:
            wait_for(lambda: not empty(), timeout=30, what="every panel to show data")
        except TimeoutError:
            missing = empty()
            raise AssertionError("panels without data:\n" + "\n".join(missing)) from None


def test_every_alert_expression_evaluates(stack: Stack) -> None:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    for rule in (rule for group in groups for rule in group["rules"]):
        _query(stack, rule["expr"])
    rules = httpx.get(f"{stack.prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
    loaded = {rule["name"]: rule["health"] for group in rules for rule in group["rules"]}
    wait_for(
        lambda: all(
            rule["health"] == "ok"
            for group in httpx.get(f"{stack.prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
            for rule in group["rules"]
        ),
        timeout=30,
        what="every rule to be evaluated without error",
    )
    assert len(loaded) == sum(len(group["rules"]) for group in groups)
