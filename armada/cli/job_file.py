"""The armadactl job file: ``{queue, jobSetId, jobs: [...]}`` in YAML (or JSON).

Each entry of ``jobs`` is a submit request item (``namespace``, ``priority``, ``podSpec``,
``clientId``, ``labels``, ``annotations``). Errors name the line (YAML syntax) or the path
of the offending field.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import yaml

from armada.model.wire.jobs import JobSubmitRequest, JobSubmitRequestItem


class JobFileError(ValueError):
    """The file cannot be read as a job file; the message says where and why."""


class JobFile(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    queue: str
    job_set_id: str
    jobs: list[JobSubmitRequestItem]

    def request(self) -> JobSubmitRequest:
        return JobSubmitRequest(queue=self.queue, job_set_id=self.job_set_id, job_request_items=self.jobs)


def load_job_file(path: Path) -> JobFile:
    try:
        text = path.read_text()
    except OSError as exc:
        raise JobFileError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        raise JobFileError(f"{path}: {where}: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise JobFileError(f"{path}: {exc}") from exc
    try:
        return msgspec.convert(data, JobFile)
    except msgspec.ValidationError as exc:
        raise JobFileError(f"{path}: {exc}") from exc
