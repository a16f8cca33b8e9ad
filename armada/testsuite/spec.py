"""Test cases in upstream's YAML format: documents split on ``---`` and merged into one case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml

from armada.model.durations import parse_duration
from armada.model.wire.jobs import JobSubmitRequestItem

TERMINAL_EVENTS = frozenset({"succeeded", "failed", "cancelled", "preempted"})
DEFAULT_TIMEOUT = "300s"


class SpecError(ValueError):
    """A test case file cannot be used; the message names the file and the problem."""


class Spec(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Base of the case's parts: camelCase keys, unknown keys are errors (typos fail loudly)."""


class Action(Spec):
    #: Fields of the API request (e.g. ``reason``), beyond the jobs the runner fills in.
    request: dict[str, Any] | None = None


class Reprioritize(Action):
    #: Reprioritize the whole job set instead of the jobs by id.
    by_job_set: bool = False


class QueueConfig(Spec):
    #: ``queueSpec``: fields of the queue created first.
    setup: dict[str, Any] = {}
    #: Fields changed by an update after creation.
    update: dict[str, Any] | None = None
    #: Checked in order: ``appearsInStream``, ``matches`` (fields), ``deleted``.
    assertions: list[dict[str, Any]] = []


class Case(Spec):
    queue: str
    #: The file name without its extension.
    name: str = ""
    job_set_id: str = ""
    jobs: list[JobSubmitRequestItem] = []
    num_batches: int = 1
    batch_size: int = 1
    interval: str = "0s"
    timeout: str = DEFAULT_TIMEOUT
    random_client_id: bool = False
    trigger_event: str = ""
    cancel: Action | None = None
    cancel_job_set: Action | None = None
    preempt: Action | None = None
    reprioritize: Reprioritize | None = None
    queue_config: QueueConfig | None = None
    #: Each item names one event type (``{submitted: null}``); matched in order per job.
    expected_events: list[dict[str, Any]] = []

    @property
    def timeout_seconds(self) -> float:
        return parse_duration(self.timeout)

    @property
    def interval_seconds(self) -> float:
        return parse_duration(self.interval)

    @property
    def expected(self) -> list[str]:
        return [name for item in self.expected_events for name in item]

    @property
    def action(self) -> str:
        """The one action the case fires, or ``""``."""
        actions = ("cancel", "cancel_job_set", "preempt", "reprioritize")
        return next((name for name in actions if getattr(self, name) is not None), "")

    @property
    def action_fields(self) -> dict[str, Any]:
        """The action's ``request`` fields (``reason``, ``newPriority``, ``filter``...)."""
        action: Action | None = getattr(self, self.action) if self.action else None
        return (action.request if action else None) or {}

    @property
    def trigger(self) -> str:
        """The event every job must have produced before the action fires."""
        if self.trigger_event:
            return self.trigger_event
        return "running" if self.action in ("preempt", "reprioritize") else "queued"


def load_case(path: Path) -> Case:
    """Read one case file; its name is the file name without the extension."""
    merged: dict[str, Any] = {}
    try:
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                if not isinstance(document, dict):
                    raise SpecError(f"{path}: every document must be a mapping")
                merged.update(document)
        case = msgspec.convert({"name": path.stem, **merged}, Case)
        parse_duration(case.timeout)
        parse_duration(case.interval)
    except (OSError, yaml.YAMLError, msgspec.ValidationError, ValueError) as exc:
        raise SpecError(f"{path}: {exc}") from exc
    if len([a for a in ("cancel", "cancel_job_set", "preempt", "reprioritize") if getattr(case, a)]) > 1:
        raise SpecError(f"{path}: a case fires at most one action")
    if not case.jobs and case.queue_config is None:
        raise SpecError(f"{path}: a case needs jobs or a queueConfig")
    return case


def case_files(paths: list[Path]) -> list[Path]:
    """The YAML files named, or found (sorted) in the directories named."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        else:
            found.append(path)
    return found
