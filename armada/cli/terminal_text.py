"""Text a job wrote, made safe to print on a terminal.

A job's output is the job's to choose: printed raw, its escape sequences could move the
cursor, rewrite lines already shown, retitle the window or (on some terminals) answer back
with keystrokes, and bidi overrides make text read differently from what it is. Control
characters (C0 but tab, DEL, C1), bidi controls and the Unicode line and paragraph
separators are shown as ``\\xNN``/``\\uNNNN`` escapes instead.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with every character that could steer the terminal shown as an escape."""
    return _UNSAFE.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
