"""Every number a client can send is bounded by its type, so a new field cannot forget it.

Walks every request type (the job, queue, query and Lookout bodies, and what executors
send) and fails for any ``float`` or ``int`` without both a lower and an upper bound: such
a field would take ``"NaN"``, ``"Infinity"`` or a 40-digit integer (see
:mod:`armada.model.numbers`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

import armada.model.wire
from armada.client import calls
from armada.lookout import wire as lookout_wire
from armada.model import leases
from armada.model.queues import Queue
from armada.model.wire.base import Request

for _module in pkgutil.iter_modules(armada.model.wire.__path__):
    importlib.import_module(f"armada.model.wire.{_module.name}")


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


#: Every struct decoded from what clients and executors send.
INPUTS: list[type[msgspec.Struct]] = sorted(
    {*_subclasses(Request), *_subclasses(leases._Strict), Queue},
    key=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
)


def _unbounded_numbers(info: mi.Type, path: str, seen: set[type]) -> Iterator[str]:
    if isinstance(info, mi.Metadata):
        yield from _unbounded_numbers(info.type, path, seen)
    elif isinstance(info, mi.FloatType | mi.IntType):
        lower = info.ge is not None or info.gt is not None
        upper = info.le is not None or info.lt is not None
        if not (lower and upper):
            yield path
    elif isinstance(info, mi.StructType):
        if info.cls in seen:
            return
        seen.add(info.cls)
        for field in info.fields:
            yield from _unbounded_numbers(field.type, f"{path}.{field.encode_name}", seen)
    elif isinstance(info, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        yield from _unbounded_numbers(info.item_type, f"{path}[]", seen)
    elif isinstance(info, mi.DictType):
        yield from _unbounded_numbers(info.value_type, f"{path}[key]", seen)
    elif isinstance(info, mi.UnionType | mi.TupleType):
        for member in info.types:
            yield from _unbounded_numbers(member, path, seen)


def test_the_walk_covers_every_family_of_input() -> None:
    names = {cls.__name__ for cls in INPUTS}
    assert {"JobSubmitRequest", "JobReprioritizeRequest", "Queue", "QueueList", "LeaseRequest"} <= names
    assert {"RunEventBatch", "JobsRequest", "GroupsRequest"} <= names
    assert lookout_wire.JobsRequest in INPUTS


@pytest.mark.parametrize("struct", INPUTS, ids=lambda cls: cls.__name__)
def test_every_number_in_a_request_is_bounded(struct: Any) -> None:
    unbounded = list(_unbounded_numbers(mi.type_info(struct), struct.__name__, set()))
    assert not unbounded, f"use a type of armada.model.numbers for {unbounded}"


def test_a_request_leaves_out_its_defaults_so_an_older_server_takes_it() -> None:
    """A client one version ahead sends nothing an older server would refuse as unknown
    unless it uses it: ``dryRun`` (added with forecasts) at its default is not sent, so a
    0.9.0 server still takes this version's submissions during a rolling upgrade."""
    body = msgspec.json.decode(msgspec.json.encode(calls.submit_jobs("q", "s", []).body))
    assert body == {"queue": "q", "jobSetId": "s", "jobRequestItems": []}
