"""The CLI run in-process (Typer's runner) against a server subprocess."""

from __future__ import annotations

from typer.testing import CliRunner, Result

from armada.cli.main import app


def armada(url: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env={"ARMADA_URL": url, **(env or {})})
