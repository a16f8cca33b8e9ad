"""The job drawer's commands and links (``lookout.commands``, ``lookout.links``) for one job."""

from __future__ import annotations

from armada.lookout.settings import LookoutSettings
from armada.lookout.templates import JobValues, parse, render, shell_value, url_value
from armada.lookout.wire import JobCommand, JobDetail, JobLink


def job_values(detail: JobDetail) -> JobValues:
    """The template values of the job the drawer shows (run fields: its latest run's)."""
    job = detail.job
    run = detail.runs[-1] if detail.runs else None
    fields = {
        "jobId": job.job_id,
        "queue": job.queue,
        "jobSet": job.job_set,
        "owner": job.owner,
        "namespace": job.namespace,
        "priorityClass": job.priority_class,
        "state": job.state,
        "runId": run.run_id if run else "",
        "cluster": run.cluster if run else "",
        "node": run.node if run else "",
    }
    return JobValues.of(fields, job.annotations)


def fill_templates(settings: LookoutSettings, detail: JobDetail) -> None:
    """Set ``detail.commands`` and ``detail.links`` from the settings' templates."""
    values = job_values(detail)
    detail.commands = [
        JobCommand(name=spec.name, description=spec.description, command=text)
        for spec in settings.commands
        if (text := render(parse(spec.template, link=False), values, shell_value)) is not None
    ]
    detail.links = [
        JobLink(name=spec.name, href=href)
        for spec in settings.links
        if (href := render(parse(spec.template, link=True), values, url_value)) is not None
    ]
