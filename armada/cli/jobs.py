"""User commands on jobs: submit, cancel, reprioritize, preempt, and job queries."""

from pathlib import Path
from typing import Annotated

import typer

from armada.cli import fleet
from armada.cli.connection import ContextOption, JsonOption, UrlOption, connect, fail, print_json
from armada.model.wire.retry_history import history_lines

QueueArgument = Annotated[str, typer.Argument(help="Queue of the jobs.")]
JobSetArgument = Annotated[str, typer.Argument(help="Job set of the jobs.")]
JobIdsArgument = Annotated[list[str], typer.Argument(help="Job ids.")]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why (at most 50 bytes; shown in events).")]
PriorityOption = Annotated[float, typer.Option("--priority", help="New priority (lower runs first).")]

cancel_app = typer.Typer(help="Cancel jobs.", no_args_is_help=True)
reprioritize_app = typer.Typer(help="Change the priority of queued and running jobs.", no_args_is_help=True)
preempt_app = typer.Typer(help="Preempt running jobs of preemptible priority classes.", no_args_is_help=True)
job_app = typer.Typer(help="Look up jobs.", no_args_is_help=True)


def submit(
    file: Annotated[
        Path, typer.Argument(help="Job file: {queue, jobSetId, jobs: [...]} (armadactl format).")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check the file against the default rules; submit nothing.")
    ] = False,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Submit the jobs of a file (all are accepted or none)."""
    from armada.cli.job_file import JobFileError, load_job_file  # noqa: PLC0415 (start-up time: yaml, msgspec)

    try:
        job_file = load_job_file(file)
    except JobFileError as exc:
        raise fail(str(exc), 2) from exc
    request = job_file.request()
    if dry_run:
        # The server's rules (and their settings) load only for a dry run.
        from armada.model.errors import ArmadaError  # noqa: PLC0415
        from armada.services.validation import SubmissionRules, validate_submission  # noqa: PLC0415
        from armada.settings import load_settings  # noqa: PLC0415

        # Judged as `serve --dev` would (a server's own policies, e.g. the Service types its
        # ingress policy allows, are its operator's).
        settings = load_settings(env={}, overrides={"server": {"dev": True}})
        try:
            validate_submission(request, SubmissionRules.from_settings(settings))
        except ArmadaError as exc:
            raise fail(f"{exc.detail} (field {exc.field})" if exc.field else exc.detail, 1) from exc
        typer.echo(
            f"{len(request.job_request_items)} job(s) for {request.queue}/{request.job_set_id} look valid"
        )
        return
    with connect(url, context) as client:
        job_ids = client.submit_jobs(request.queue, request.job_set_id, request.job_request_items)
    for job_id in job_ids:
        typer.echo(f"submitted job {job_id} to {request.queue}/{request.job_set_id}")


@cancel_app.command("job")
def cancel_job(
    queue: QueueArgument,
    job_set: JobSetArgument,
    job_ids: JobIdsArgument,
    *,
    reason: ReasonOption = "",
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Cancel jobs by id."""
    with connect(url, context) as client:
        cancelled = client.cancel_jobs(queue, job_set, job_ids, reason)
    typer.echo(f"cancellation requested for {len(cancelled)} job(s)")


@cancel_app.command("job-set")
def cancel_job_set(
    queue: QueueArgument,
    job_set: JobSetArgument,
    *,
    state: Annotated[
        list[str] | None, typer.Option("--state", help="Only jobs in this state (repeatable), e.g. QUEUED.")
    ] = None,
    reason: ReasonOption = "",
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Cancel a job set's unfinished jobs (or those in the given states)."""
    with connect(url, context) as client:
        cancelled = client.cancel_job_set(queue, job_set, [s.upper() for s in state or []], reason)
    typer.echo(f"cancellation requested for {len(cancelled)} job(s)")


def _report_reprioritized(results: dict[str, str]) -> None:
    failed = {job_id: why for job_id, why in results.items() if why}
    typer.echo(f"reprioritized {len(results) - len(failed)} job(s)")
    for job_id, why in failed.items():
        typer.echo(f"{job_id}: {why}", err=True)
    if failed:
        raise typer.Exit(1)


@reprioritize_app.command("job")
def reprioritize_job(
    queue: QueueArgument,
    job_set: JobSetArgument,
    job_ids: JobIdsArgument,
    *,
    priority: PriorityOption,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Change the priority of jobs by id."""
    with connect(url, context) as client:
        results = client.reprioritize_jobs(queue, job_set, job_ids, priority)
    _report_reprioritized(results)


@reprioritize_app.command("job-set")
def reprioritize_job_set(
    queue: QueueArgument,
    job_set: JobSetArgument,
    priority: PriorityOption,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Change the priority of every unfinished job of a job set."""
    with connect(url, context) as client:
        results = client.reprioritize_jobs(queue, job_set, [], priority)
    _report_reprioritized(results)


@preempt_app.command("job")
def preempt_job(
    queue: QueueArgument,
    job_set: JobSetArgument,
    job_ids: JobIdsArgument,
    *,
    reason: ReasonOption = "",
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Preempt running jobs by id (their priority class must be preemptible)."""
    with connect(url, context) as client:
        preempted = client.preempt_jobs(queue, job_set, job_ids, reason)
    typer.echo(f"preemption requested for {len(preempted)} job(s)")


@job_app.command("status")
def status(
    job_ids: JobIdsArgument, json: JsonOption = False, url: UrlOption = None, context: ContextOption = None
) -> None:
    """Show the state of jobs (UNKNOWN for ids never submitted)."""
    with connect(url, context) as client:
        states = client.job_status(job_ids)
    if json:
        print_json(states)
        return
    for job_id, state in states.items():
        typer.echo(f"{job_id}\t{state}")


@job_app.command("details")
def details(
    job_ids: JobIdsArgument,
    json: JsonOption = False,
    spec: Annotated[bool, typer.Option("--spec", help="Include the job spec.")] = False,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Show jobs' details and runs."""
    with connect(url, context) as client:
        found = client.job_details(job_ids, expand_spec=spec, expand_runs=True)
    if json:
        print_json(found)
        return
    for job_id in job_ids:
        job = found.get(job_id)
        if job is None:
            typer.echo(f"{job_id}\tUNKNOWN")
            continue
        typer.echo(
            f"{job_id}\t{job.state}\t{job.queue}/{job.jobset}\tsubmitted {job.submitted_ts.isoformat()}"
        )
        if job.cancel_reason:
            typer.echo(f"  cancelled by {job.cancel_user}: {job.cancel_reason}")
        for run in job.job_runs:
            why = f"\t{run.reason}" if run.reason else ""
            typer.echo(f"  run {run.run_id}\t{run.state}\t{run.cluster}/{run.node}{why}")
        if job.retry_history is not None and job.retry_history.eventful:
            for line in history_lines(job.retry_history, indent="    "):
                typer.echo(f"  {line}")


# Bulk commands on a queue, an executor or a node (armada.cli.fleet).
cancel_app.command("queue")(fleet.cancel_queue)
cancel_app.command("executor")(fleet.executor_command("cancel"))
cancel_app.command("node")(fleet.node_command("cancel"))
preempt_app.command("queue")(fleet.preempt_queue)
preempt_app.command("executor")(fleet.executor_command("preempt"))
preempt_app.command("node")(fleet.node_command("preempt"))
