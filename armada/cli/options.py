"""Command-line options shared by several commands.

The settings module (and the auth, executor and scheduling settings it names) loads when a
command reads its settings, not when the CLI starts.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from armada.settings import Settings

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", help="YAML settings file (see docs/configuration.md).", exists=True, dir_okay=False
    ),
]
DatabaseUrlOption = Annotated[
    str | None,
    typer.Option("--database-url", help="Database URL (default: sqlite:///armada.db).", envvar=None),
]


def settings_or_exit(config: Path | None, overrides: dict[str, dict[str, Any]]) -> "Settings":
    """Load settings, turning a bad configuration into a one-line error and exit code 2."""
    from armada.settings import Settings, SettingsError, load_settings  # noqa: PLC0415 (start-up time)
    from armada.settings_env import unknown_variables  # noqa: PLC0415

    try:
        settings = load_settings(config, overrides=overrides)
    except SettingsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    for name in unknown_variables(Settings, os.environ):
        typer.echo(f"warning: {name} is not a setting (no such area); it is ignored", err=True)
    return settings
