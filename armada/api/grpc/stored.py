"""Stored events as the gRPC event stream reads them: a ``submitted`` job's pod spec and
resource requirements stay the raw JSON they were stored as.

The stream only converts them to protobuf, once per distinct spec (see
:mod:`armada.api.grpc.jobs_proto`), so building their dicts and lists for every event
was waste: it was most of the cost of reading a page of the log, largely in the garbage
collector passes that so many short-lived containers trigger. Every other event kind is
decoded as usual; a payload that does not decode is still isolated to its own record.
"""

from __future__ import annotations

from typing import Union

import msgspec

from armada.model import events as ev
from armada.model.jobs import Job


class RawSpecJob(Job):
    """A stored job whose pod spec and requirements are kept as their stored JSON."""

    pod_spec: msgspec.Raw = msgspec.Raw(b"{}")  # type: ignore[assignment]
    scheduling_resource_requirements: msgspec.Raw = msgspec.Raw(b"{}")  # type: ignore[assignment]


class RawSpecSubmitted(ev.JobSubmitted, tag="submitted"):
    job: RawSpecJob


_KINDS = tuple(kind for kind in ev.AnyEvent.__args__ if kind is not ev.JobSubmitted)
_decoder: msgspec.json.Decoder[ev.AnyEvent] = msgspec.json.Decoder(Union[(*_KINDS, RawSpecSubmitted)])


def decode_for_stream(payload: bytes) -> ev.AnyEvent:
    """A stored event, its ``submitted`` job's pod spec and requirements left as raw JSON."""
    result: ev.AnyEvent = _decoder.decode(payload)
    return result
