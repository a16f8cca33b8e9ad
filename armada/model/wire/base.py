"""Base classes of the wire types: camelCase names, strict inputs, compact outputs."""

from __future__ import annotations

import msgspec


class Request(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """A request body: unknown fields are an error (400 naming the field)."""


class Response(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """A response body: default values are left out, as upstream's protojson does."""


class Empty(Response):
    """Upstream's ``google.protobuf.Empty``: ``{}``."""
