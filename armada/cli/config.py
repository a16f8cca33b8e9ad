"""``armada config``: inspect settings."""

import typer

from armada.cli.options import ConfigOption, settings_or_exit

app = typer.Typer(help="Inspect settings.", no_args_is_help=True)


@app.command("show")
def show(config: ConfigOption = None) -> None:
    """Print the effective settings (defaults, file and environment merged) as YAML."""
    import msgspec  # noqa: PLC0415 (start-up time: settings load only in the commands)
    import yaml  # noqa: PLC0415

    settings = settings_or_exit(config, {})
    typer.echo(yaml.safe_dump(msgspec.to_builtins(settings), sort_keys=False), nl=False)


@app.command("docs")
def docs() -> None:
    """Print the settings reference (docs/configuration.md) as Markdown."""
    from armada.cli.settings_docs import settings_markdown  # noqa: PLC0415

    typer.echo(settings_markdown())
