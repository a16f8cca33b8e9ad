"""Base classes of the wire types: camelCase names, strict inputs, compact outputs."""

from __future__ import annotations

from typing import Annotated

import msgspec

#: Most job (or run) ids one request may name: each costs a lookup and a line of response,
#: and a million-id request would hold a worker and the database for everyone else.
#: Larger sets are sent in several requests.
MAX_IDS_PER_REQUEST = 10_000

#: A list of job or run ids, at most :data:`MAX_IDS_PER_REQUEST` (more: 400 naming the field).
IdList = Annotated[list[str], msgspec.Meta(max_length=MAX_IDS_PER_REQUEST)]


class Request(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A request body: unknown fields are an error (400 naming the field). Default values are
    left out when one is sent, so a client one version ahead still talks to an older server
    as long as it uses nothing new (a new field at its default is not sent, and not refused)."""


class Response(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """A response body: default values are left out, as upstream's protojson does."""


class Empty(Response):
    """Upstream's ``google.protobuf.Empty``: ``{}``."""
