"""Secrets given as files: ``--password-file`` / ``--token-file`` (``-`` for stdin).

A secret on the command line is visible to every user of the machine (``ps``) and stays in
the shell history; in a file (or piped in) it is neither. Imports nothing heavy: it runs
on every command's start-up path.
"""

import sys
from pathlib import Path

import typer


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
