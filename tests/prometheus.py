"""Debian's Prometheus scraping a live ``armada serve --dev``, for the dashboard test and the
dashboard rendering script: start both, make jobs flow, run the dashboards' queries."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from armada.client import ArmadaApiError, ArmadaClient
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION, GANG_ID_ANNOTATION
from armada.model.queues import Queue
from tests.e2e.cluster import job, states_are, wait_for
from tests.processes import ROOT, free_port, running_server

DASHBOARDS = sorted((ROOT / "deploy" / "grafana").glob("*.json"))
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yaml"
PROMETHEUS = shutil.which("prometheus")


@dataclass
class Stack:
    prometheus: str
    server: str


def panels(path: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """(panel title, [(PromQL, legend format)]) of every panel."""
    dashboard = json.loads(path.read_text())
    return [
        (panel["title"], [(target["expr"], target.get("legendFormat", "")) for target in panel["targets"]])
        for panel in dashboard["panels"]
    ]


def query(stack: Stack, expr: str, **range_: float) -> dict[str, Any]:
    """``/api/v1/query`` (or ``query_range`` given ``start``, ``end`` and ``step``): its data."""
    api = "query_range" if range_ else "query"
    params = {"query": expr, **{key: str(value) for key, value in range_.items()}}
    body: dict[str, Any] = httpx.get(f"{stack.prometheus}/api/v1/{api}", params=params, timeout=10).json()
    if body["status"] != "success":
        raise AssertionError(f"{expr}: {body}")
    data: dict[str, Any] = body["data"]
    return data


def _up(stack: Stack) -> bool:
    try:
        response = httpx.get(f"{stack.prometheus}/api/v1/query", params={"query": "up"}, timeout=5)
    except httpx.HTTPError:
        return False
    if response.status_code != 200:  # 503 while its storage opens
        return False
    return [item["value"][1] for item in response.json()["data"]["result"]] == ["1"]


@contextmanager
def prometheus_stack(tmp: Path) -> Iterator[Stack]:
    """``armada serve --dev`` and Prometheus scraping it every second, with the alert rules."""
    assert PROMETHEUS is not None, "no prometheus (apt-get install prometheus)"
    env = {"ARMADA_EXECUTOR_PROCESS": json.dumps({"stateDir": str(tmp / "executor")})}
    with running_server(tmp, "--dev", env=env) as server:
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(ALERTS)],
            "scrape_configs": [
                {"job_name": "armada", "static_configs": [{"targets": [server.url.removeprefix("http://")]}]}
            ],
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = free_port()
        command = [
            PROMETHEUS,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        with (tmp / "prometheus.log").open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            stack = Stack(f"http://127.0.0.1:{port}", server.url)
            wait_for(lambda: _up(stack), what="Prometheus to scrape the server")
            yield stack
        finally:
            process.terminate()
            process.wait(timeout=30)


def flow_jobs(stack: Stack, batches: int = 3) -> None:
    """Jobs that finish in batches, each seen by a scrape before the next (so counters and
    histograms move between samples: rates and quantiles have data), two jobs that keep
    running, one that stays queued (the first member of a gang of two: the queued panels
    have data), and one unknown job looked up (a 404 for the error panel)."""
    succeeded = 'sum(armada_scheduler_job_state_counter_by_queue_total{state="succeeded"})'

    def scraped(count: int) -> Callable[[], bool]:
        def check() -> bool:
            result = query(stack, succeeded)["result"]
            return bool(result) and float(result[0]["value"][1]) == count

        return check

    with ArmadaClient(stack.server) as client:
        if not any(queue.name == "obs" for queue in client.list_queues()):
            client.create_queue(Queue(name="obs"))
            # Small requests: the dev executor's node is this host (two cores here).
            running = client.submit_jobs("obs", "long", [job("sleep 600", cpu="100m") for _ in range(2)])
            wait_for(states_are(client, running, "RUNNING"), what="long jobs to run")
            gang = {GANG_ID_ANNOTATION: "incomplete", GANG_CARDINALITY_ANNOTATION: "2"}
            client.submit_jobs("obs", "waiting", [job("true", cpu="100m", annotations=gang)])
        finished: list[str] = []
        done = query(stack, succeeded)["result"]
        before = int(float(done[0]["value"][1])) if done else 0
        for _ in range(batches):
            finished += client.submit_jobs("obs", "short", [job("true", cpu="100m") for _ in range(3)])
            wait_for(states_are(client, finished, "SUCCEEDED"), what="short jobs to succeed")
            wait_for(scraped(before + len(finished)), what="Prometheus to scrape the batch")
        try:
            client.job_report("01h0000000000000000000000")
        except ArmadaApiError as error:
            assert error.status == 404
        else:
            raise AssertionError("an unknown job's report was found")
