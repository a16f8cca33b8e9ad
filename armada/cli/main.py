"""The ``armada`` command: one binary for the server, the executor, users and operators."""

from __future__ import annotations

import typer

import armada
from armada.cli import admin, auth, config, jobs, queues, serve, watch
from armada.executor.cli import executor

app = typer.Typer(
    name="armada",
    help="Armada: queue batch jobs and share Kubernetes clusters fairly between teams.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
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


@app.command("version")
def version() -> None:
    """Print armada's version."""
    typer.echo(armada.__version__)


def main() -> None:
    app()
