"""Lookout's saved views: a user's named jobs-page states, and the rules they must keep.

A view's ``state`` is the page's own business (filters, columns, order, sort, grouping): the
server keeps it as an opaque JSON object and only bounds it, so the page can grow new
state without a server change. The name is part of a URL path, hence its small charset.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import msgspec

from armada.model.errors import InvalidRequest, TooLarge
from armada.model.wire.base import Request, Response

#: Longest view name.
MAX_NAME = 64
#: Letters, digits, space, ``.``, ``_``, ``-``; starting and ending with neither space nor dot.
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9 ._-]{0,62}[A-Za-z0-9_-])?")

_encoder = msgspec.json.Encoder()


class SavedViewBody(Request):
    """``PUT /v1/lookout/views/{name}``: the page state to keep under that name."""

    state: dict[str, Any]


class SavedView(Response):
    name: str
    state: dict[str, Any]
    updated: datetime


class SavedViewList(Response):
    #: The caller's views, by name.
    views: list[SavedView]


def check_name(name: str) -> None:
    """A name the path can carry and a person can read (else 400 naming ``name``)."""
    if len(name) > MAX_NAME:
        raise InvalidRequest(f"a view name has at most {MAX_NAME} characters", field="name")
    if not NAME.fullmatch(name):
        raise InvalidRequest(
            "a view name is letters, digits, spaces, '.', '_' and '-', starting with a letter or"
            " digit and not ending with a space or '.'",
            field="name",
        )


def check_state(state: dict[str, Any], max_bytes: int) -> None:
    """A state of at most ``max_bytes`` as JSON (else 413 naming ``state``)."""
    size = len(_encoder.encode(state))
    if size > max_bytes:
        raise TooLarge(
            f"the view's state is {size} bytes as JSON; at most {max_bytes} are kept", field="state"
        )
