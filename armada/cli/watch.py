"""``armada watch``: follow a job set live — counts per state, and the events that matter.

The work is in :mod:`armada.cli.follow`, imported when the command runs (start-up time).
"""

from typing import Annotated

import typer

from armada.cli.connection import ContextOption, UrlOption, connect


def watch(
    queue: Annotated[str, typer.Argument(help="Queue of the job set.")],
    job_set: Annotated[str, typer.Argument(help="Job set to watch.")],
    *,
    exit_if_inactive: Annotated[
        bool, typer.Option("--exit-if-inactive", help="Exit once every job of the set has finished.")
    ] = False,
    raw: Annotated[bool, typer.Option("--raw", help="Print the event stream as NDJSON.")] = False,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Follow a job set: a live count of its jobs per state, and failures as they happen.

    Runs until every job has finished (with --exit-if-inactive) or Ctrl-C, however long the
    job set stays quiet; a dropped connection is reopened where it left off.
    """
    from armada.cli.follow import watch_job_set  # noqa: PLC0415 (start-up time)

    with connect(url, context) as client:
        try:
            watch_job_set(client, queue, job_set, raw, exit_if_inactive)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
