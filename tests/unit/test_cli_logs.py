"""``armada logs`` refuses a bad ``--since`` before it calls anyone."""

from __future__ import annotations

from typer.testing import CliRunner

from armada.cli.main import build


def test_a_bad_since_is_a_usage_error() -> None:
    result = CliRunner().invoke(
        build({"logs"}),
        ["logs", "01hzzzzzzzzzzzzzzzzzzzzzzz", "--since", "yesterday"],
        env={"ARMADA_URL": "http://127.0.0.1:9"},
    )
    assert result.exit_code == 2
    assert "--since: not a duration: 'yesterday'" in result.output
