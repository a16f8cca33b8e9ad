"""Reading a job's command line: the argv a container would run, and the fake backend's plan.

The fake backend runs nothing; it only needs to know how long a run takes and how it
ends, which it reads from the usual shapes of test jobs: ``sleep N`` (``N`` with an
optional ``s``/``m``/``h``/``d`` suffix), ``sleep $(( (RANDOM % N) + M ))`` and ``exit N``.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from typing import Any

_RANDOM_SLEEP = re.compile(r"sleep\s+\$\(\(\s*\(?\s*RANDOM\s*%\s*(\d+)\s*\)?\s*(?:\+\s*(\d+)\s*)?\)\)")
_SLEEP = re.compile(r"(?<![\w-])sleep\s+(\d+(?:\.\d+)?|\.\d+)([smhd]?)(?![\w.])")
_EXIT = re.compile(r"(?<![\w-])exit\s+(\d+)(?![\w.])")
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def first_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """The first container of a PodSpec (empty if there is none)."""
    containers = pod_spec.get("containers") or [{}]
    first: dict[str, Any] = containers[0]
    return first


def container_argv(pod_spec: dict[str, Any]) -> list[str]:
    """The first container's ``command + args``; with no command, ``args`` alone."""
    container = first_container(pod_spec)
    return [str(word) for word in (container.get("command") or [])] + [
        str(word) for word in (container.get("args") or [])
    ]


@dataclass(frozen=True)
class FakePlan:
    """How a simulated run goes: its duration and exit code."""

    seconds: float
    exit_code: int


def fake_plan(argv: list[str], *, default_seconds: float, rng: random.Random) -> FakePlan:
    """Duration and exit code a fake run takes from its command line.

    Every ``sleep`` in the command counts (they add up); the first ``exit N`` gives the
    exit code. A command with no ``sleep`` lasts ``default_seconds``.
    """
    text = " ".join(argv)
    if "RANDOM" not in text:  # the same plan every time: read each command line once
        return _fixed_plan(text, default_seconds)
    return _plan(text, default_seconds, rng)


@functools.lru_cache(maxsize=1024)
def _fixed_plan(text: str, default_seconds: float) -> FakePlan:
    return _plan(text, default_seconds, random.Random(0))  # no RANDOM in ``text``: never drawn from


def _plan(text: str, default_seconds: float, rng: random.Random) -> FakePlan:
    seconds = 0.0
    found_sleep = False
    for match in _RANDOM_SLEEP.finditer(text):
        found_sleep = True
        seconds += rng.randrange(int(match[1]) or 1) + int(match[2] or 0)
    for match in _SLEEP.finditer(_RANDOM_SLEEP.sub("", text)):
        found_sleep = True
        seconds += float(match[1]) * _UNIT_SECONDS[match[2]]
    exit_match = _EXIT.search(text)
    return FakePlan(
        seconds=seconds if found_sleep else default_seconds,
        exit_code=int(exit_match[1]) if exit_match else 0,
    )
