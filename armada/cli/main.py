"""The ``armada`` command: one binary for the server, the executor, users and operators.

Start-up time is part of every command's latency, so the CLI loads little: each command's
module imports its heavy dependencies (the server, the executor, the client) in the command
body, and :func:`main` builds only the commands named on the command line (Typer would
otherwise inspect every command's signature on every run). ``armada --help`` and shell
completion build them all. ``app`` is the whole CLI, for tests and embedding.
"""

import os
import sys
from collections.abc import Collection, Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Annotated

import typer

import armada
from armada.cli.connection import CONNECTION_OPTIONS, ContextOption, UrlOption

#: Commands in the order ``--help`` lists them: name -> (module, attribute, is a group).
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "serve": ("armada.cli.serve", "serve", False),
    "executor": ("armada.cli.executor", "app", True),
    "executor-settings": ("armada.cli.fleet", "settings_app", True),
    "node": ("armada.cli.fleet", "node_app", True),
    "submit": ("armada.cli.jobs", "submit", False),
    "watch": ("armada.cli.watch", "watch", False),
    "logs": ("armada.cli.logs", "logs", False),
    "admin": ("armada.cli.admin", "app", True),
    "config": ("armada.cli.config", "app", True),
    "auth": ("armada.cli.auth", "app", True),
    "queue": ("armada.cli.queues", "app", True),
    "retry-policy": ("armada.cli.retry_policies", "app", True),
    "cancel": ("armada.cli.jobs", "cancel_app", True),
    "reprioritize": ("armada.cli.jobs", "reprioritize_app", True),
    "preempt": ("armada.cli.jobs", "preempt_app", True),
    "job": ("armada.cli.jobs", "job_app", True),
    "jobs": ("armada.cli.job_list", "jobs", False),
    "report": ("armada.cli.report", "app", True),
    "simulate": ("armada.cli.simulate", "simulate", False),
    "testsuite": ("armada.cli.testsuite", "app", True),
}


def connection_options(
    ca_cert: Annotated[
        Path | None,
        typer.Option(help="CA bundle that signed the server's certificate.", envvar="ARMADA_CA_CERT"),
    ] = None,
    token: Annotated[str | None, typer.Option(help="Bearer token.", envvar="ARMADA_TOKEN")] = None,
    username: Annotated[str | None, typer.Option(help="Basic auth user.", envvar="ARMADA_USERNAME")] = None,
    password: Annotated[
        str | None, typer.Option(help="Basic auth password.", envvar="ARMADA_PASSWORD")
    ] = None,
    token_file: Annotated[
        str | None, typer.Option(help="Read the bearer token from this file ('-': stdin).")
    ] = None,
    password_file: Annotated[
        str | None, typer.Option(help="Read the basic auth password from this file ('-': stdin).")
    ] = None,
) -> None:
    """How user commands authenticate to the server and verify it (before the command:
    ``armada --ca-cert ca.pem --username alice queue list``)."""
    from armada.cli.secret_files import secret_from  # noqa: PLC0415 (start-up time: see above)

    CONNECTION_OPTIONS.set(
        {
            "ca_cert": str(ca_cert) if ca_cert else None,
            "token": secret_from(token, token_file, "token"),
            "username": username,
            "password": secret_from(password, password_file, "password"),
        }
    )


def version(url: UrlOption = None, context: ContextOption = None) -> None:
    """Print armada's version; with --url or --context also the server's and its schema's."""
    if url is None and context is None:
        typer.echo(armada.__version__)
        return
    from armada.cli.connection import connect  # noqa: PLC0415 (start-up time: see above)

    typer.echo(f"client {armada.__version__}")  # even when the server cannot be reached
    with connect(url, context) as client:
        server = client.server_version()
    typer.echo(
        f"server {server.version} (schema {server.schema_revision}, newest known {server.schema_head}, "
        f"executor protocol {server.executor_protocol})"
    )


def build(names: Collection[str] | None = None) -> typer.Typer:
    """The CLI with the commands called ``names`` (all of them by default)."""
    cli = typer.Typer(
        name="armada",
        help="Armada: queue batch jobs and share Kubernetes clusters fairly between teams.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        # Plain help and errors: Rich's help formatter costs more start-up than the CLI itself.
        rich_markup_mode=None,
    )
    cli.callback()(connection_options)
    for name, (module, attribute, group) in COMMANDS.items():
        if name == "admin":  # version's place in --help: after the commands, before the groups
            cli.command("version")(version)
        if names is not None and name not in names:
            continue
        command = getattr(import_module(module), attribute)
        if group:
            cli.add_typer(command, name=name)
        else:
            cli.command(name)(command)
    return cli


def named_commands(argv: Sequence[str], environ: Mapping[str, str]) -> set[str] | None:
    """The commands a run with ``argv`` may need, or None when it needs them all: help before
    any command lists every command, and shell completion may complete any of them.

    Every word naming a command counts (an option's value could be one): only commands are
    left out, never the one that runs.
    """
    if any(key.startswith("_") and key.endswith("_COMPLETE") for key in environ):
        return None
    named = {word for word in argv if word in COMMANDS}
    first = next((index for index, word in enumerate(argv) if word in COMMANDS), None)
    if first is None or "--help" in argv[:first]:
        return None
    return named


def __getattr__(name: str) -> typer.Typer:
    """``app``: the whole CLI, built on first use."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()["app"] = cli = build()
    return cli


def main() -> None:
    build(named_commands(sys.argv[1:], os.environ))()
