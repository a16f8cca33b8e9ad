"""The artefact users get: this project's wheel, installed the way the README says
(``pipx install armada-scheduler``) into a throwaway pipx home, so that tests run the
installed ``armada`` command and nothing of the work tree.

``.ci/run`` builds the wheel and sdist once and names the wheel in ``ARMADA_TEST_WHEEL``;
without it (a local run) the wheel is built here, the same way (``python -m build``: the
sdist first, then the wheel from the sdist, so a file left out of either fails).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tests.processes import ROOT

WHEEL_ENV = "ARMADA_TEST_WHEEL"
DISTRIBUTION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]


@dataclass(frozen=True)
class Installed:
    """An ``armada`` installed by pipx: the command on PATH, and its own virtualenv."""

    armada: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def built_wheel(outdir: Path) -> Path:
    """The wheel named by ``ARMADA_TEST_WHEEL``, or one built from the work tree into ``outdir``."""
    given = os.environ.get(WHEEL_ENV)
    if given:
        return Path(given).resolve()
    build = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(ROOT)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, f"python -m build failed:\n{build.stdout[-2000:]}{build.stderr[-2000:]}"
    (wheel,) = outdir.glob("*.whl")
    return wheel


def pipx_install(wheel: Path, home: Path) -> Installed:
    """``pipx install WHEEL`` with ``PIPX_HOME`` (and its bin and man directories) in ``home``."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PIPX_", "PYTHONPATH"))},
        "PIPX_HOME": str(home),
        "PIPX_BIN_DIR": str(home / "bin"),
        "PIPX_MAN_DIR": str(home / "man"),
    }
    install = subprocess.run(
        [sys.executable, "-m", "pipx", "install", str(wheel)],
        check=False,
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, f"pipx install failed:\n{install.stdout[-2000:]}{install.stderr[-2000:]}"
    return Installed(armada=home / "bin" / "armada", venv=home / "venvs" / DISTRIBUTION)
