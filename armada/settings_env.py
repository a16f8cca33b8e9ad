"""Settings from ``ARMADA_*`` environment variables, checked as strictly as the YAML file.

``ARMADA_<AREA>_<FIELD>`` sets one field; ``ARMADA_<AREA>`` sets several of an area's keys at
once as a JSON object (below the per-field variables). A variable naming an area but no
field of it is a typo and is refused, as a misspelt YAML key is; other unknown ``ARMADA_*``
variables are reported by :func:`unknown_variables` (clients and jobs have their own).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

import msgspec

ENV_PREFIX = "ARMADA_"
#: ``ARMADA_*`` variables that are not server settings: the client's connection, the
#: variables the executor gives jobs, and the test suite's.
NOT_SETTINGS = frozenset(
    {"URL", "TOKEN", "USERNAME", "PASSWORD", "CA_CERT", "JOB_ID", "QUEUE", "JOB_SET_ID"}
    | {"FAULT_SEED", "FUZZ_EXAMPLES", "AIRFLOW_VENV"}
)
NOT_SETTINGS_PREFIXES = ("GANG_", "TEST")


class EnvironmentSettingsError(ValueError):
    """A variable that names an area but none of its fields, or a bad area object."""


def env_name(*parts: str) -> str:
    """The environment variable of a settings key, e.g. ``ARMADA_SERVER_PORT`` for ``server.port``."""
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


def _areas(settings_type: type[msgspec.Struct]) -> dict[str, tuple[str, dict[str, str]]]:
    """Area variable -> (area key, field variable -> field key)."""
    return {
        env_name(area.encode_name): (
            area.encode_name,
            {
                env_name(area.encode_name, f.encode_name): f.encode_name
                for f in msgspec.structs.fields(area.type)
            },
        )
        for area in msgspec.structs.fields(settings_type)
    }


def from_environment(
    settings_type: type[msgspec.Struct], env: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    """The settings ``env`` gives, as YAML-shaped data; raises on a variable no field has."""
    found: dict[str, dict[str, Any]] = {}
    for area_variable, (area, fields) in _areas(settings_type).items():
        if area_variable in env:
            whole = _env_value(env[area_variable])
            if not isinstance(whole, dict):
                raise EnvironmentSettingsError(f"{area_variable} must be a JSON object of {area}'s keys")
            found[area] = whole
        for name in sorted(n for n in env if n.startswith(area_variable + "_")):
            if name not in fields:
                close = difflib.get_close_matches(name, fields, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise EnvironmentSettingsError(
                    f"{name}: {area} has no such key{hint}; nested keys go as JSON in the "
                    f"variable of their top-level key, or several at once in {area_variable}"
                )
            found.setdefault(area, {})[fields[name]] = _env_value(env[name])
    return found


def unknown_variables(settings_type: type[msgspec.Struct], env: Mapping[str, str]) -> list[str]:
    """``ARMADA_*`` variables that name no area: most likely a misspelt area."""
    areas = _areas(settings_type)
    return sorted(
        name
        for name in env
        if name.startswith(ENV_PREFIX)
        and not any(name == a or name.startswith(a + "_") for a in areas)
        and (rest := name.removeprefix(ENV_PREFIX)) not in NOT_SETTINGS
        and not rest.startswith(NOT_SETTINGS_PREFIXES)
    )
