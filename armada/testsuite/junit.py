"""JUnit XML of a run, for CI systems that show test reports."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from armada.testsuite.suite import CaseResult


def write_junit(results: list[CaseResult], path: Path) -> None:
    failures = sum(not r.passed for r in results)
    root = ET.Element("testsuites", tests=str(len(results)), failures=str(failures))
    suite = ET.SubElement(
        root,
        "testsuite",
        name="armada-testsuite",
        tests=str(len(results)),
        failures=str(failures),
        errors="0",
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    for result in results:
        case = ET.SubElement(suite, "testcase", name=result.name, classname="armada-testsuite")
        case.set("time", f"{result.seconds:.3f}")
        if not result.passed:
            failure = ET.SubElement(case, "failure", message=result.failure)
            failure.text = result.failure
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
