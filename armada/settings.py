"""Settings: one struct per area, from defaults, an optional YAML file, and ``ARMADA_*`` variables.

Precedence, lowest first: defaults, the ``--config`` file, environment variables
(``ARMADA_<AREA>_<FIELD>``, e.g. ``ARMADA_DATABASE_URL`` or ``ARMADA_SERVER_PORT``), then
command-line flags. Defaults run with no file at all. YAML keys are camelCase like upstream.
Every field carries a description; ``armada config docs`` renders them to
``docs/configuration.md``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import yaml
from msgspec import Meta

from armada.scheduling.config import SchedulingConfig

ENV_PREFIX = "ARMADA_"


class SettingsError(ValueError):
    """Configuration that cannot be used; the message names the key."""


class _Area(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Base of every settings area."""


class DatabaseSettings(_Area):
    url: Annotated[
        str,
        Meta(
            description="SQLAlchemy URL of the database. The default is an embedded SQLite file; "
            "use postgresql+psycopg://user@host:5432/db for PostgreSQL."
        ),
    ] = "sqlite:///armada.db"
    pool_size: Annotated[int, Meta(ge=1, description="Connections kept open to PostgreSQL.")] = 10


class ServerSettings(_Area):
    host: Annotated[str, Meta(description="Address the HTTP server binds to.")] = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535, description="Port the HTTP server listens on.")] = 8080
    dev: Annotated[
        bool,
        Meta(
            description="Development mode: also run one in-process executor with the local process backend."
        ),
    ] = False
    max_request_bytes: Annotated[
        int, Meta(ge=1024, description="Largest request body accepted; larger ones get 413.")
    ] = 16 * 1024 * 1024
    shutdown_timeout: Annotated[
        int, Meta(ge=0, description="Seconds to let in-flight requests finish on SIGTERM.")
    ] = 10


class LoggingSettings(_Area):
    format: Annotated[
        Literal["auto", "console", "json"],
        Meta(description="Log format: console for people, json for machines, auto picks by terminal."),
    ] = "auto"
    level: Annotated[
        Literal["debug", "info", "warning", "error"], Meta(description="Lowest level logged.")
    ] = "info"


class SubmissionSettings(_Area):
    min_job_resources: Annotated[
        dict[str, str],
        Meta(description="Smallest request per job and resource; smaller requests are rejected."),
    ] = msgspec.field(default_factory=lambda: {"memory": "1Mi"})
    max_pod_spec_bytes: Annotated[
        int, Meta(ge=1, description="Largest pod spec accepted, measured as compact JSON.")
    ] = 64 * 1024


class Settings(_Area):
    """All of armada's settings, one struct per area."""

    database: DatabaseSettings = msgspec.field(default_factory=DatabaseSettings)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    logging: LoggingSettings = msgspec.field(default_factory=LoggingSettings)
    scheduling: SchedulingConfig = msgspec.field(default_factory=SchedulingConfig)
    submission: SubmissionSettings = msgspec.field(default_factory=SubmissionSettings)


def _env_name(*parts: str) -> str:
    return ENV_PREFIX + "_".join(re.sub(r"(?<!^)(?=[A-Z])", "_", p).upper() for p in parts)


def _env_value(raw: str) -> Any:
    """Environment values are strings; JSON lists and objects are allowed for nested fields."""
    stripped = raw.strip()
    if stripped[:1] in ("[", "{"):
        try:
            return msgspec.json.decode(stripped)
        except msgspec.DecodeError:
            return raw
    return raw


def _from_environment(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for area in msgspec.structs.fields(Settings):
        area_type = area.type
        for field in msgspec.structs.fields(area_type):
            name = _env_name(area.encode_name, field.encode_name)
            if name in env:
                found.setdefault(area.encode_name, {})[field.encode_name] = _env_value(env[name])
    return found


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


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
    data = _merge(data, _from_environment(os.environ if env is None else env))
    data = _merge(
        data, {k: {f: v for f, v in area.items() if v is not None} for k, area in (overrides or {}).items()}
    )
    try:
        return msgspec.convert(data, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid configuration: {exc}") from exc


def settings_markdown() -> str:
    """Reference of every setting, generated from the structs (``docs/configuration.md``)."""
    lines = [
        "# Configuration reference",
        "",
        "Generated by `armada config docs`; do not edit by hand.",
        "",
        "Settings come from defaults, then `--config FILE` (YAML, camelCase keys), then",
        "`ARMADA_<AREA>_<FIELD>` environment variables, then command-line flags.",
        "",
    ]
    defaults = msgspec.to_builtins(Settings())
    for area in msgspec.structs.fields(Settings):
        lines += [
            f"## `{area.encode_name}`",
            "",
            "| key | environment | default | description |",
            "|---|---|---|---|",
        ]
        schema = msgspec.json.schema(area.type)
        properties = schema["$defs"][schema["$ref"].split("/")[-1]]["properties"]
        for field in msgspec.structs.fields(area.type):
            default = defaults[area.encode_name].get(field.encode_name)
            description = properties[field.encode_name].get("description", "")
            key = f"{area.encode_name}.{field.encode_name}"
            env_name = _env_name(area.encode_name, field.encode_name)
            lines.append(
                f"| `{key}` | `{env_name}` | `{msgspec.json.encode(default).decode()}` | {description} |"
            )
        lines.append("")
    return "\n".join(lines)
