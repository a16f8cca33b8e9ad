"""Where the server is and how to reach it: URL, credentials, CA certificate.

The CLI resolves these from ``--url``, ``ARMADA_URL`` and a contexts file
(``~/.config/armada/config.yaml``, armadactl-style)::

    currentContext: local
    contexts:
      local:
        armadaUrl: http://127.0.0.1:8080
        token: ...            # or username/password
        caCert: /path/ca.pem
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import msgspec

DEFAULT_URL = "http://127.0.0.1:8080"
CONTEXTS_FILE = Path("~/.config/armada/config.yaml")


class ClientConfig(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    armada_url: str = DEFAULT_URL
    token: str = ""
    username: str = ""
    password: str = ""
    ca_cert: str = ""
    timeout: float = 30.0

    def httpx_options(self) -> dict[str, Any]:
        """Keyword arguments for ``httpx.Client``/``httpx.AsyncClient``."""
        options: dict[str, Any] = {
            "base_url": self.armada_url.rstrip("/"),
            "timeout": httpx.Timeout(self.timeout),
        }
        if self.token:
            options["headers"] = {"Authorization": f"Bearer {self.token}"}
        elif self.username:
            options["auth"] = httpx.BasicAuth(self.username, self.password)
        if self.ca_cert:
            options["verify"] = ssl.create_default_context(cafile=self.ca_cert)
        elif not self.armada_url.lower().startswith("https:"):
            # A plain-HTTP server needs no CA bundle, and loading certifi's costs ~30 ms per
            # command. This context trusts no CA at all: nothing is weakened if it is ever used.
            options["verify"] = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        return options


class ContextsFile(msgspec.Struct, rename="camel", kw_only=True):
    current_context: str = ""
    contexts: dict[str, ClientConfig] = {}


class ConfigError(ValueError):
    """The contexts file cannot be used; the message says why."""


#: Environment variables that override the contexts file, by :class:`ClientConfig` field.
ENVIRONMENT = {
    "armada_url": "ARMADA_URL",
    "token": "ARMADA_TOKEN",
    "username": "ARMADA_USERNAME",
    "password": "ARMADA_PASSWORD",
    "ca_cert": "ARMADA_CA_CERT",
}


def load_config(
    url: str | None = None,
    context: str | None = None,
    path: Path | None = None,
    *,
    overrides: Mapping[str, str | None] | None = None,
) -> ClientConfig:
    """Connection settings: explicit values (``url``, ``overrides`` by field name), else the
    ``ARMADA_URL``/``ARMADA_TOKEN``/``ARMADA_USERNAME``/``ARMADA_PASSWORD``/``ARMADA_CA_CERT``
    variables, else the contexts file, else the defaults."""
    config = _from_contexts_file((path or CONTEXTS_FILE).expanduser(), context)
    explicit = {"armada_url": url, **(overrides or {})}
    changes = {
        field: value
        for field, variable in ENVIRONMENT.items()
        if (value := explicit.get(field) or os.environ.get(variable))
    }
    return msgspec.structs.replace(config, **changes) if changes else config


def _from_contexts_file(path: Path, context: str | None) -> ClientConfig:
    if not path.exists():
        if context:
            raise ConfigError(f"context {context!r} requested but {path} does not exist")
        return ClientConfig()
    import yaml  # noqa: PLC0415 (start-up time: most users have no contexts file)

    try:
        contexts = msgspec.convert(yaml.safe_load(path.read_text()) or {}, ContextsFile)
    except (OSError, yaml.YAMLError, msgspec.ValidationError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    name = context or contexts.current_context
    if not name:
        return ClientConfig()
    if name not in contexts.contexts:
        raise ConfigError(f"{path}: no context named {name!r}")
    return contexts.contexts[name]
