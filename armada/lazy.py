"""Lazy package exports, so that importing a package does not import all of it.

A package's ``__init__`` names what it offers (for readers and type checkers, under
``TYPE_CHECKING``) and maps each name to the module defining it; the module is imported on
first use. This keeps ``armada queue list`` from importing numpy because the wire types
live next to the scheduling core, and the CLI from importing the executor because the
settings name its settings struct.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """Make ``package`` load ``exports`` (name -> defining module) on first use; return its
    module ``__getattr__``.

    An export may share its name with a submodule (``armada.scheduling.schedule`` defines
    ``schedule``). Importing a submodule sets it as an attribute of its package, which would
    hide the export; the package ignores that for exported names, as an eager ``from
    .schedule import schedule`` in ``__init__`` used to overwrite it.
    """
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(source), name)
        module.__dict__[name] = value  # later lookups skip this function
        return value

    class LazyPackage(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in exports and isinstance(value, types.ModuleType):
                return
            super().__setattr__(name, value)

    module.__class__ = LazyPackage
    return __getattr__
