"""``--password-file`` / ``--token-file``: secrets from a file or standard input, not argv."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from armada.cli.main import app
from armada.settings import load_settings
from tests.databases import sqlite_url
from tests.processes import ROOT
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    with serving(sqlite_url(tmp_path_factory.mktemp("cli-secrets")), settings) as srv:
        yield srv


def armada(server: ApiServer, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"ARMADA_URL": server.url}, input=stdin)
    return result.exit_code, result.output


def test_password_from_a_file_or_stdin(secured: ApiServer, tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("admin-pass\n")
    assert (
        armada(secured, "--username", "admin", "--password-file", str(tmp_path / "pw"), "queue", "list")[0]
        == 0
    )
    code, _ = armada(
        secured, "--username", "admin", "--password-file", "-", "queue", "list", stdin="admin-pass\n"
    )
    assert code == 0
    (tmp_path / "wrong").write_text("nope\n")
    code, output = armada(
        secured, "--username", "admin", "--password-file", str(tmp_path / "wrong"), "queue", "list"
    )
    assert code == 1 and "invalid credentials" in output


def test_token_from_a_file_and_conflicting_or_missing_sources(secured: ApiServer, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("executor-token")
    assert armada(secured, "--token-file", str(tmp_path / "token"), "queue", "list")[0] == 0
    code, output = armada(secured, "--token", "x", "--token-file", str(tmp_path / "token"), "queue", "list")
    assert code == 2 and "not both" in output
    code, output = armada(secured, "--password-file", str(tmp_path / "absent"), "queue", "list")
    assert code == 2 and "cannot read" in output
