"""The CLI run in-process (Typer's runner) against an API test server."""

from __future__ import annotations

from typer.testing import CliRunner, Result

from armada.cli.main import app
from tests.servers import ApiServer


def armada(server: ApiServer, *args: str) -> Result:
    return CliRunner().invoke(app, ["--help"] if not args else list(args), env={"ARMADA_URL": server.url})
