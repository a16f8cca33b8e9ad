"""Go-style durations (``100s``, ``1m30s``, ``500ms``, ``72h``), as upstream writes them.

Shared by the settings (``submission.defaultActiveDeadline`` and friends), the test-suite
case files and ``armada logs --since``, so all read the same spelling the same way.
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (``100s``, ``1m30s``, ``500ms``); a bare number is seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    if not text or _DURATION.sub("", text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(text))


def setting_seconds(key: str, duration: str) -> float:
    """Seconds in the duration setting ``key`` (empty: 0); a bad one raises naming the key."""
    if not duration:
        return 0.0
    try:
        return parse_duration(duration)
    except ValueError as exc:
        raise ValueError(f"{key}: {exc} (write e.g. 30s, 5m or 72h)") from None
