"""The base of every settings area: camelCase keys, unknown keys refused.

Each area is declared beside the code that owns it; :mod:`armada.settings` only gathers them."""

from __future__ import annotations

import msgspec


class SettingsArea(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Base of every settings area."""
