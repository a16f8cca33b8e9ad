"""The ``armada`` command: one binary for the server, the executor, users and operators."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import armada
from armada.cli import admin, auth, config, jobs, queues, report, serve, testsuite, watch
from armada.cli.connection import CONNECTION_OPTIONS
from armada.executor.cli import executor

app = typer.Typer(
    name="armada",
    help="Armada: queue batch jobs and share Kubernetes clusters fairly between teams.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
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
    CONNECTION_OPTIONS.set(
        {
            "ca_cert": str(ca_cert) if ca_cert else None,
            "token": auth.secret_from(token, token_file, "token"),
            "username": username,
            "password": auth.secret_from(password, password_file, "password"),
        }
    )


app.command("serve")(serve.serve)
app.command("executor")(executor)
app.add_typer(admin.app, name="admin")
app.add_typer(config.app, name="config")
app.add_typer(auth.app, name="auth")
app.add_typer(queues.app, name="queue")
app.command("submit")(jobs.submit)
app.add_typer(jobs.cancel_app, name="cancel")
app.add_typer(jobs.reprioritize_app, name="reprioritize")
app.add_typer(jobs.preempt_app, name="preempt")
app.add_typer(jobs.job_app, name="job")
app.command("watch")(watch.watch)
app.add_typer(report.app, name="report")
app.add_typer(testsuite.app, name="testsuite")


@app.command("version")
def version() -> None:
    """Print armada's version."""
    typer.echo(armada.__version__)


def main() -> None:
    app()
