"""The previous release, checked out beside this one with its own virtualenv, for upgrade tests.

``PREVIOUS_COMMIT`` is updated at each release (CHANGELOG.md names the versions). The commit
is checked out with ``git worktree add`` and installed into a virtualenv of its own, both
cached under ``.venv/previous/<commit>`` (so CI's cache of ``.venv`` keeps them) and made
once: a lock file serialises concurrent test runs, a stamp marks a finished install.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.processes import ROOT

#: 0.9.0: main before issue 39 (the first version with a version number users can rely on).
PREVIOUS_VERSION = "0.9.0"
PREVIOUS_COMMIT = "f469cfba195377af8227d5c0d5fb7a13dcecf1fb"


class PreviousVersion:
    """Where the previous version's code is, and its installed ``armada`` command (run it
    with ``process_env(source=False)``: nothing of this work tree on the path)."""

    def __init__(self, root: Path) -> None:
        self.source = root / "src"
        self.python = root / "venv" / "bin" / "python"
        self.armada = root / "venv" / "bin" / "armada"


def _git(*args: str) -> None:
    subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, timeout=120)


def previous_version() -> PreviousVersion:
    """The previous version, checked out and installed on first use."""
    root = ROOT / ".venv" / "previous" / PREVIOUS_COMMIT
    root.mkdir(parents=True, exist_ok=True)
    previous = PreviousVersion(root)
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "installed").exists():
            return previous
        shutil.rmtree(previous.source, ignore_errors=True)
        shutil.rmtree(root / "venv", ignore_errors=True)
        _git("worktree", "prune")
        _git("worktree", "add", "--detach", "--force", str(previous.source), PREVIOUS_COMMIT)
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
        pip = [str(previous.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        env = {**os.environ, "PIP_NO_INPUT": "1"}
        subprocess.run([*pip, str(previous.source)], check=True, env=env, timeout=600)
        (root / "installed").touch()
    return previous
