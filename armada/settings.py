"""Settings: one struct per area, from defaults, an optional YAML file, and ``ARMADA_*`` variables.

Each area is declared beside the code that owns it (``database``: :mod:`armada.eventstore.settings`,
``server``: :mod:`armada.api.settings`, ``logging``: :mod:`armada.logging_setup`, ``scheduler``:
:mod:`armada.scheduler.settings`, ``scheduling``: :mod:`armada.scheduling.config`,
``submission`` and ``retention``: :mod:`armada.services.settings`, ``executor``:
:mod:`armada.executor.settings`, ``auth``: :mod:`armada.auth.settings`, ``tracing``:
:mod:`armada.tracing`, ``lookout``: :mod:`armada.lookout.settings`); this module only
gathers them, so the server's core never imports the executor's settings.

Precedence, lowest first: defaults, the ``--config`` file, environment variables
(``ARMADA_<AREA>_<FIELD>``, e.g. ``ARMADA_DATABASE_URL`` or ``ARMADA_SERVER_PORT``, and
``ARMADA_<AREA>`` as a JSON object: :mod:`armada.settings_env`), then
command-line flags. Defaults run with no file at all. YAML keys are camelCase like upstream.
Every field carries a description (``Meta(description=...)`` or a ``#:`` comment), which
``armada config docs`` (:mod:`armada.cli.settings_docs`) renders to ``docs/configuration.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from armada.api.settings import ServerSettings
from armada.auth.settings import AuthSettings
from armada.eventstore.settings import DatabaseSettings
from armada.executor.settings import ExecutorSettings
from armada.logging_setup import LoggingSettings
from armada.lookout.settings import LookoutSettings
from armada.model.settings_area import SettingsArea
from armada.scheduler.settings import SchedulerServiceSettings
from armada.scheduling.config import SchedulingConfig
from armada.services.settings import RetentionSettings, SubmissionSettings
from armada.settings_env import EnvironmentSettingsError, from_environment
from armada.tracing import TracingSettings

#: Defaults under ``server.dev``, below the file, the environment and the flags: a laptop has
#: no API server to protect, and upstream's 50 jobs/s per queue would throttle it.
#: ``serve --dev`` runs jobs as local processes: a NodePort service is only the job's own port
#: on this host (nothing is opened), so the getting-started examples' NodePort services work.
_DEV_SERVICE_TYPES = {"ingressPolicy": {"allowedServiceTypes": ["NodePort", "Headless"]}}
DEV_DEFAULTS: dict[str, dict[str, Any]] = {
    "submission": _DEV_SERVICE_TYPES,
    "executor": _DEV_SERVICE_TYPES,
    "scheduling": {
        "maximumSchedulingRate": 1_000_000.0,
        "maximumSchedulingBurst": 1_000_000,
        "maximumPerQueueSchedulingRate": 1_000_000.0,
        "maximumPerQueueSchedulingBurst": 1_000_000,
    },
}


class SettingsError(ValueError):
    """Configuration that cannot be used; the message names the key."""


class Settings(SettingsArea):
    """All of armada's settings, one struct per area."""

    database: DatabaseSettings = msgspec.field(default_factory=DatabaseSettings)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    logging: LoggingSettings = msgspec.field(default_factory=LoggingSettings)
    scheduler: SchedulerServiceSettings = msgspec.field(default_factory=SchedulerServiceSettings)
    scheduling: SchedulingConfig = msgspec.field(default_factory=SchedulingConfig)
    submission: SubmissionSettings = msgspec.field(default_factory=SubmissionSettings)
    executor: ExecutorSettings = msgspec.field(default_factory=ExecutorSettings)
    auth: AuthSettings = msgspec.field(default_factory=AuthSettings)
    retention: RetentionSettings = msgspec.field(default_factory=RetentionSettings)
    tracing: TracingSettings = msgspec.field(default_factory=TracingSettings)
    lookout: LookoutSettings = msgspec.field(default_factory=LookoutSettings)

    def __post_init__(self) -> None:
        unknown = sorted(
            set(self.submission.default_job_tolerations_by_priority_class)
            - set(self.scheduling.priority_classes)
        )
        if unknown:
            known = ", ".join(sorted(self.scheduling.priority_classes))
            raise ValueError(
                f"submission.defaultJobTolerationsByPriorityClass names unknown priority classes "
                f"{', '.join(unknown)}; known: {known}"
            )


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _dev_mode(data: Mapping[str, Any]) -> bool:
    """Whether the merged settings ask for development mode (an invalid value is reported
    by the conversion of the whole)."""
    server = data.get("server")
    if not isinstance(server, Mapping):
        return False
    try:
        return msgspec.convert(server.get("dev", False), bool, strict=False)
    except msgspec.ValidationError:
        return False


def load_settings(
    config_file: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """Build :class:`Settings` from the file, the environment and explicit overrides."""
    data: dict[str, Any] = {}
    if config_file is not None:
        try:
            loaded = yaml.safe_load(config_file.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise SettingsError(f"cannot read {config_file}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise SettingsError(f"{config_file}: the top level must be a mapping of areas")
        data = loaded
    try:
        data = _merge(data, from_environment(Settings, os.environ if env is None else env))
    except EnvironmentSettingsError as exc:
        raise SettingsError(str(exc)) from exc
    data = _merge(
        data, {k: {f: v for f, v in area.items() if v is not None} for k, area in (overrides or {}).items()}
    )
    if _dev_mode(data):
        data = _merge(DEV_DEFAULTS, data)
    try:
        return msgspec.convert(data, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid configuration: {exc}") from exc
