"""``armada auth``: make the hashes that the ``auth`` settings store instead of secrets."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from armada.auth.secrets import hash_password, hash_token, new_token

app = typer.Typer(help="Make password and token hashes for the auth settings.", no_args_is_help=True)


def secret_from(given: str | None, file: str | None, option: str) -> str | None:
    """``--password``/``--token``, or the first line of ``--password-file``/``--token-file``
    (``-``: standard input). A secret in a file stays out of ``ps`` and the shell history."""
    if file is None:
        return given
    if given is not None:
        raise typer.BadParameter(f"give --{option} or --{option}-file, not both")
    try:
        text = sys.stdin.readline() if file == "-" else Path(file).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise typer.BadParameter(f"cannot read --{option}-file {file}: {exc}") from exc
    secret = text.splitlines()[0] if text.strip() else ""
    if not secret:
        raise typer.BadParameter(f"--{option}-file {file} is empty")
    return secret


def _secret(given: str, prompt: str) -> str:
    """The secret from the option, else standard input (piped) or a hidden prompt."""
    if given:
        return given
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    return str(typer.prompt(prompt, hide_input=True, confirmation_prompt=True))


@app.command("hash-password")
def hash_password_command(
    password: Annotated[str, typer.Option(help="The password (default: stdin or a prompt).")] = "",
) -> None:
    """Print the scrypt hash of a password, for ``auth.basicUsers.<name>.passwordHash``."""
    typer.echo(hash_password(_secret(password, "Password")))


@app.command("hash-token")
def hash_token_command(
    token: Annotated[str, typer.Option(help="The token (default: stdin or a prompt).")] = "",
) -> None:
    """Print the SHA-256 hash of a bearer token, for ``auth.tokens[].tokenHash``."""
    typer.echo(hash_token(_secret(token, "Token")))


@app.command("new-token")
def new_token_command() -> None:
    """Print a new random bearer token and, on stderr, its hash for the configuration."""
    token = new_token()
    typer.echo(token)
    typer.echo(f"tokenHash: {hash_token(token)}", err=True)
