"""The alert rules in deploy/prometheus: promtool accepts them, its unit tests pass (each alert
firing on bad data and silent on healthy data), and every runbook link lands on a runbook."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from tests.processes import ROOT

RULES = ROOT / "deploy" / "prometheus"
OPERATIONS = ROOT / "docs" / "operations.md"


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("no promtool (apt-get install prometheus)")
    return found


def _alerts() -> list[dict[str, object]]:
    groups = yaml.safe_load((RULES / "alerts.yaml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


COMMANDS = [["check", "rules", "alerts.yaml"], ["test", "rules", "alerts_test.yaml"]]


@pytest.mark.parametrize("command", COMMANDS)
def test_promtool_accepts_the_rules_and_their_unit_tests(command: list[str]) -> None:
    result = subprocess.run([_promtool(), *command], cwd=RULES, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_unit_tests_firing_and_not() -> None:
    tests = yaml.safe_load((RULES / "alerts_test.yaml").read_text())["tests"]
    cases = [case for test in tests for case in test["alert_rule_test"]]
    for alert in (str(rule["alert"]) for rule in _alerts()):
        outcomes = {bool(case["exp_alerts"]) for case in cases if case["alertname"] == alert}
        assert outcomes == {True, False}, f"{alert}: needs a firing and a silent case"


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_alert_links_its_runbook() -> None:
    anchors = _anchors(OPERATIONS.read_text())
    for rule in _alerts():
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        path, _, anchor = str(annotations["runbook_url"]).partition("#")
        assert (path, anchor) == ("docs/operations.md", str(rule["alert"]).lower())
        assert anchor in anchors, f"docs/operations.md has no runbook heading for {rule['alert']}"
