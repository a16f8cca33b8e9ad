"""``armada auth``: make the hashes that the ``auth`` settings store instead of secrets."""

import sys
from typing import Annotated

import typer

app = typer.Typer(help="Make password and token hashes for the auth settings.", no_args_is_help=True)


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
    from armada.auth.secrets import hash_password  # noqa: PLC0415 (start-up time)

    typer.echo(hash_password(_secret(password, "Password")))


@app.command("hash-token")
def hash_token_command(
    token: Annotated[str, typer.Option(help="The token (default: stdin or a prompt).")] = "",
) -> None:
    """Print the SHA-256 hash of a bearer token, for ``auth.tokens[].tokenHash``."""
    from armada.auth.secrets import hash_token  # noqa: PLC0415

    typer.echo(hash_token(_secret(token, "Token")))


@app.command("new-token")
def new_token_command() -> None:
    """Print a new random bearer token and, on stderr, its hash for the configuration."""
    from armada.auth.secrets import hash_token, new_token  # noqa: PLC0415

    token = new_token()
    typer.echo(token)
    typer.echo(f"tokenHash: {hash_token(token)}", err=True)
