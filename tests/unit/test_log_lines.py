"""Selecting log lines as Kubernetes does (the process and fake backends rely on it)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from armada.executor import log_lines
from armada.executor.log_lines import cap, parse, select, stamp
from armada.model.leases import LogOrder
from armada.model.wire.logs import LogLine

T0 = 1_700_000_000.0
TEXT = "".join(f"{stamp(T0 + i)} line {i}\n" for i in range(10))


def order(**fields: object) -> LogOrder:
    return LogOrder(request_id="q", run_id="r", job_id="j", **fields)  # type: ignore[arg-type]


def texts(lines: list[LogLine]) -> list[str]:
    return [line.line for line in lines]


def test_stamps_parse_back() -> None:
    assert stamp(T0 + 0.5) == "2023-11-14T22:13:20.500000000Z"
    lines = parse(TEXT + "no stamp here\n")
    assert lines[0] == LogLine(timestamp=stamp(T0), line="line 0")
    assert lines[-1] == LogLine(line="no stamp here")


def test_since_then_tail_then_bytes() -> None:
    lines = parse(TEXT)
    assert texts(select(lines, order(tail_lines=2))) == ["line 8", "line 9"]
    assert texts(select(lines, order(since_seconds=3), now=T0 + 9.5)) == ["line 7", "line 8", "line 9"]
    since = datetime.fromtimestamp(T0 + 4, UTC)
    assert texts(select(lines, order(since_time=since, tail_lines=100))) == [
        f"line {i}" for i in range(4, 10)
    ]
    assert texts(select(lines, order(since_time=since, since_seconds=100), now=T0 + 9)) == texts(lines[4:])
    assert texts(select(lines, order(limit_bytes=10))) == ["line 0", "lin"]  # 7 bytes, then 3
    assert select(lines, order(tail_lines=0)) == []
    assert select(lines, order(tail_lines=25)) == lines  # more than there are: all of them


def test_answers_keep_the_newest_lines_under_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    many = [LogLine(line=f"{i:02d}" + "x" * 97) for i in range(50)]
    monkeypatch.setattr(log_lines, "ANSWER_MAX_BYTES", 1111)
    assert cap(many) == many[-10:]  # `[`, then 111 bytes a line: `{"line":"…"}` and a comma
    assert cap(many, 600) == many[-5:]  # the order's own cap, when smaller
    assert len(msgspec.json.encode(cap(many))) <= 1111


def test_the_cap_counts_encoded_bytes_not_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """A character that takes 3 bytes in UTF-8 (or 6 as a JSON escape) counts for them all."""
    monkeypatch.setattr(log_lines, "ANSWER_MAX_BYTES", 10_000)
    for char in ("\u20ac", "\x1b"):
        lines = [LogLine(line=char * 1000) for _ in range(20)]
        kept = cap(lines)
        assert 0 < len(kept) < 10
        assert len(msgspec.json.encode(kept)) <= 10_000


@pytest.mark.parametrize(
    "separator", ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
)
def test_a_line_ends_at_newline_only_so_a_job_cannot_forge_stamped_lines(separator: str) -> None:
    forged = f"{stamp(T0 - 3600)} I happened an hour earlier"
    text = f"{stamp(T0)} real{separator}{forged}\n{stamp(T0 + 1)} next\n"
    lines = parse(text)
    assert lines == [
        LogLine(timestamp=stamp(T0), line=f"real{separator}{forged}"),
        LogLine(timestamp=stamp(T0 + 1), line="next"),
    ]
    since = datetime.fromtimestamp(T0 + 0.5, UTC)
    assert texts(select(lines, order(since_time=since))) == ["next"]


def test_a_crlf_line_loses_its_carriage_return_only() -> None:
    assert parse(f"{stamp(T0)} windows\r\n{stamp(T0 + 1)} a\rb\r\n") == [
        LogLine(timestamp=stamp(T0), line="windows"),
        LogLine(timestamp=stamp(T0 + 1), line="a\rb"),
    ]
    assert parse("") == []
    assert parse("unterminated") == [LogLine(line="unterminated")]
