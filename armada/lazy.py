"""Lazy package exports, so that importing a package does not import all of it.

A package's ``__init__`` names what it offers (for readers and type checkers, under
``TYPE_CHECKING``) and maps each name to the module defining it; the module is imported on
first use. This keeps ``armada queue list`` from importing numpy because the wire types
live next to the scheduling core, and the CLI from importing the executor because the
settings name its settings struct.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each name to its module."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # later lookups skip this function
        return value

    return __getattr__
