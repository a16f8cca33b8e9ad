"""Scenario tables (upstream-simulator style YAML under ``tests/scenarios/``), step by step.

Each step optionally advances time, finishes a queue's jobs, submits jobs, runs one cycle,
applies its decisions and checks expectations (``running`` per queue, ``scheduled``,
``preempted``, ``preemptedBy``, ``reasons``, ``reasonsStartWith``, ``nodesWithLabel``).
A numeric expectation may be a ``[low, high]`` range.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from armada.model.quantities import parse_resource_list
from armada.scheduling import JobRequirements, NodeSpec, SchedulingConfig, SchedulingResult, Taint, Toleration
from tests.unit.scheduling.helpers import Sim, unlimited

SCENARIOS = sorted((Path(__file__).parents[2] / "scenarios").glob("*.yaml"))


def _config(overrides: dict[str, Any]) -> SchedulingConfig:
    base = msgspec.to_builtins(unlimited())
    base.update(overrides)
    return msgspec.convert(base, SchedulingConfig)


def _nodes(clusters: list[dict[str, Any]]) -> list[NodeSpec]:
    out = []
    for cluster in clusters:
        for t, template in enumerate(cluster["nodeTemplates"]):
            for i in range(template["number"]):
                out.append(
                    NodeSpec(
                        id=f"{cluster['name']}-{t}-{i:03d}",
                        pool=cluster.get("pool", "default"),
                        executor=cluster["name"],
                        labels=template.get("labels", {}),
                        taints=tuple(msgspec.convert(template.get("taints", []), list[Taint])),
                        allocatable=parse_resource_list(template["totalResources"]),
                    )
                )
    return out


class Runner:
    def __init__(self, scenario: dict[str, Any]) -> None:
        self.sim = Sim(_config(scenario.get("config", {})), nodes=_nodes(scenario["clusters"]))
        for q in scenario["queues"]:
            limits = q.get("resourceLimitsByPriorityClassName", {})
            self.sim.queue(q["name"], q.get("weight", 1.0), resource_limits_by_priority_class_name=limits)
        self.counters: Counter[str] = Counter()
        self.ids_by_prefix: dict[str, list[str]] = {}

    def submit(self, spec: dict[str, Any]) -> None:
        gang = spec.get("gang", {})
        prefix = spec.get("idPrefix") or gang.get("id") or spec["queue"]
        jobs = []
        for _ in range(spec.get("number", 1)):
            job_id = f"{prefix}-{self.counters[prefix]}"
            self.counters[prefix] += 1
            self.ids_by_prefix.setdefault(prefix, []).append(job_id)
            jobs.append(
                JobRequirements(
                    id=job_id,
                    queue=spec["queue"],
                    requests=parse_resource_list(spec["requests"]),
                    priority_class_name=spec.get("priorityClassName", ""),
                    priority=spec.get("priority", 0.0),
                    submitted=self.sim.now,
                    node_selector=spec.get("nodeSelector", {}),
                    tolerations=tuple(msgspec.convert(spec.get("tolerations", []), list[Toleration])),
                    gang_id=gang.get("id", ""),
                    gang_cardinality=gang.get("cardinality", 1),
                    gang_node_uniformity_label=gang.get("nodeUniformityLabel", ""),
                )
            )
        self.sim.submit(jobs)

    def finish(self, spec: dict[str, Any]) -> None:
        db = self.sim.db
        queue = db.queue_index(spec["queue"])
        for row, job_id in enumerate(db.ids):
            if job_id is None or int(db.cols["queue"][row]) != queue:
                continue
            if not spec.get("running") or db.state(job_id) == 2:
                db.remove(job_id)

    def step(self, step: dict[str, Any]) -> SchedulingResult:
        if "finish" in step:
            self.finish(step["finish"])
        for spec in step.get("submit", []):
            self.submit(spec)
        return self.sim.cycle(advance=step.get("advance", 1.0))

    def check(self, name: str, index: int, result: SchedulingResult, expect: dict[str, Any]) -> None:
        where = f"{name}, step {index + 1}"
        for queue, want in expect.get("running", {}).items():
            _within(self.sim.running(queue), want, f"{where}: running {queue}")
        if "scheduled" in expect:
            _within(len(result.leases), expect["scheduled"], f"{where}: scheduled")
        if "preempted" in expect:
            _within(len(result.preemptions), expect["preempted"], f"{where}: preempted")
        if "preemptedBy" in expect:
            assert {p.preempted_by for p in result.preemptions} == {expect["preemptedBy"]}, where
        reasons = {**expect.get("reasons", {}), **expect.get("reasonsStartWith", {})}
        for job_id, want in reasons.items():
            got = result.reasons.for_job(self.sim.db, job_id)
            assert got == want or (job_id in expect.get("reasonsStartWith", {}) and got.startswith(want)), (
                f"{where}: reason for {job_id}: {got!r}"
            )
        for prefix, labels in expect.get("nodesWithLabel", {}).items():
            for job_id in self.ids_by_prefix[prefix]:
                node = self.sim.nodes.specs[self.sim.nodes.row(self.sim.db.node_of(job_id) or "") or 0]
                assert node is not None and all(node.labels.get(k) == v for k, v in labels.items()), where


def _within(got: int, want: int | list[int], what: str) -> None:
    low, high = (want, want) if isinstance(want, int) else want
    assert low <= got <= high, f"{what}: {got} not in [{low}, {high}]"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    scenario = yaml.safe_load(path.read_text())
    runner = Runner(scenario)
    for index, step in enumerate(scenario["steps"]):
        result = runner.step(step)
        runner.check(scenario["name"], index, result, step.get("expect", {}))
