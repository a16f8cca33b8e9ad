"""No test module is imported by another: what tests share lives in helper modules
(``tests/harness.py``, ``tests/servers.py``, ``tests/api/jobs.py``…), so that running or
changing one test module never runs or breaks another's tests by import."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_test_modules(source: str) -> list[str]:
    """The ``test_*`` modules ``source`` imports (``import a.test_x``, ``from a.test_x import y``,
    ``from a import test_x``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.rsplit(".", 1)[-1].startswith("test_")]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.rsplit(".", 1)[-1].startswith("test_"):
                found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("test_")]
    return found


def test_the_check_sees_each_form_of_import() -> None:
    source = (
        "import tests.e2e.test_grpc\nfrom tests.api.test_logs import run\nfrom tests.api import test_cli\n"
    )
    assert imported_test_modules(source) == [
        "tests.e2e.test_grpc",
        "tests.api.test_logs",
        "tests.api.test_cli",
    ]
    assert imported_test_modules("from tests.harness import Harness\nimport pytest\n") == []


def test_no_test_module_imports_another() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)} imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for module in imported_test_modules(path.read_text())
    ]
    assert offenders == [], "move what is shared into a helper module:\n" + "\n".join(offenders)
