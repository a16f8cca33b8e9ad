"""Name the exact field of a validation error, map keys included.

msgspec reports where a value failed as a path, but elides map keys:
``resourceLimits[...]`` rather than ``resourceLimits.cpu``, and says only ``$[...]`` for a
JSON number beyond float64 (``1e400``). With the request's JSON at hand the field is found
again: the key whose value, followed down the rest of the path, breaks the rule the
message states (a bound, or the expected type). This runs only for a request that has
already failed, so it may take its time.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+|\.\.\.)\]")
_BOUND = re.compile(r"Expected `(?:float|int)` (>=|<=|>|<) (\S+)")
_GOT = re.compile(r"got `(\w+)`")
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
#: msgspec's names for JSON types, as in "got `str`".
_JSON_TYPE = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    type(None): "null",
    list: "array",
    dict: "object",
}
ELIDED = "[...]"


def resolve(path: str, body: Any, message: str) -> str:
    """``path`` with each elided map key replaced by the key that holds the bad value."""
    if ELIDED not in path:
        return path
    # A name segment keeps its name; an index segment is "[0]" or "[...]", brackets and all.
    segments = [name or f"[{index}]" for name, index in _SEGMENT.findall("." + path)]
    found = _walk(body, segments, message)
    return path if found is None else _format(found)


def first_overflow(body: bytes) -> str | None:
    """Path of the first number in the JSON ``body`` that is beyond a float's range."""
    try:
        tree = json.loads(body, parse_float=Decimal)
    except (ValueError, RecursionError):
        return None
    found = _overflow(tree)
    return None if found is None else _format(found)


def _overflow(node: Any) -> list[str | int] | None:
    if isinstance(node, Decimal):
        return None if math.isfinite(float(node)) else []
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        below = _overflow(child)
        if below is not None:
            return [key, *below]
    return None


def _walk(node: Any, segments: list[str], message: str) -> list[str | int] | None:
    if not segments:
        return [] if _breaks_rule(node, message) else None
    head, rest = segments[0], segments[1:]
    if head == ELIDED:
        candidates: list[tuple[str | int, Any]] = list(node.items()) if isinstance(node, dict) else []
    elif head.startswith("["):
        index = int(head[1:-1])
        candidates = [(index, node[index])] if isinstance(node, list) and index < len(node) else []
    else:
        candidates = [(head, node[head])] if isinstance(node, dict) and head in node else []
    for key, child in candidates:
        below = _walk(child, rest, message)
        if below is not None:
            return [key, *below]
    return None


def _breaks_rule(value: Any, message: str) -> bool:
    got = _GOT.search(message)
    if got:
        return _JSON_TYPE.get(type(value)) == got[1]
    bound = _BOUND.search(message)
    if bound:
        number = _as_number(value)
        return number is None or not _COMPARE[bound[1]](number, float(bound[2]))
    if "out of range" in message:
        number = _as_number(value)
        return number is None or not math.isfinite(number)
    return True


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):
        return None


def _format(segments: list[str | int]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in segments).lstrip(".")
