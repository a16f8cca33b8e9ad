"""The layer order of docs/architecture.md ("Layers and packages"): a module imports only its
own layer or the layers below it, and the transports stay apart.

Every ``import`` counts, also those inside functions and under ``TYPE_CHECKING``: a layer
that needs a type from above needs a Protocol of its own instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import armada

ROOT = Path(armada.__file__).parent

#: Bottom to top. A package not listed fails the test: place it when adding it.
LAYERS: list[set[str]] = [
    # types and small helpers, no I/O policy
    {"armada", "model", "lazy", "tasks", "logging_setup", "tracing"},
    {"eventstore"},  # the log, the views, the database
    {"scheduling"},  # the pure scheduling core
    {"auth"},  # identities and permissions
    {"retries"},  # domain package: what happens to a run that ended without a result
    {"scheduler"},  # domain package: the scheduler service
    {"services"},  # submission, queues, queries, streams, logs, retention, forecasts
    {"fleet", "reports", "lookout", "metrics"},  # fleet controls and the read sides
    {"client"},  # typed HTTP client
    {"api", "executor", "testsuite", "settings", "settings_env"},  # transports, agents, settings
    {"cli", "runtime", "__main__"},  # the command line: the composition root
]

#: Pairs that must not import each other although layering would allow it.
APART = [
    ("api", "executor"),  # the server never depends on the executor, nor the other way round
    ("scheduling", "eventstore"),  # the core is pure: no database
]


def layer_of(module: str) -> int:
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else "armada"
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index
    raise AssertionError(f"{module}: package {package!r} is in no layer of LAYERS")


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "armada"


def module_name(path: Path) -> str:
    parts = ["armada", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def ours(module: str) -> bool:
    return module == "armada" or module.startswith("armada.")


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every armada module ``path`` imports."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if ours(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if not ours(base):
                continue
            for alias in node.names:
                name = f"{base}.{alias.name}"
                yield node.lineno, name if is_module(name) else base


def violations() -> Iterator[str]:
    for path in sorted(ROOT.rglob("*.py")):
        importer = module_name(path)
        for line, imported in imports(path):
            where = f"{path.relative_to(ROOT.parent)}:{line}: {importer} imports {imported}"
            if layer_of(imported) > layer_of(importer):
                yield f"{where} (a higher layer)"
            pair = {package_of(importer), package_of(imported)}
            if any(pair == set(apart) for apart in APART):
                yield f"{where} (packages kept apart)"


def test_every_import_goes_down_the_layers() -> None:
    assert list(violations()) == []


def test_the_layers_are_in_the_documented_order() -> None:
    assert layer_of("armada.api.app") > layer_of("armada.scheduler.loop") > layer_of("armada.model.jobs")
    assert layer_of("armada.scheduling.schedule") > layer_of("armada.eventstore.store")
