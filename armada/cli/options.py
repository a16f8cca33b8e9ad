"""Command-line options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from armada.settings import Settings, SettingsError, load_settings

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


def settings_or_exit(config: Path | None, overrides: dict[str, dict[str, Any]]) -> Settings:
    """Load settings, turning a bad configuration into a one-line error and exit code 2."""
    try:
        return load_settings(config, overrides=overrides)
    except SettingsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
