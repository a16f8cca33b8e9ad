"""The log stamper's output file: stamping, partial lines, long lines, rotation."""

from __future__ import annotations

from pathlib import Path

from armada.executor.backends.log_stamp import PIECE_BYTES, Output
from armada.executor.log_lines import parse


def lines_of(path: Path) -> list[str]:
    return [line.line for line in parse(path.read_text())]


def test_a_line_is_written_once_whole_and_a_last_partial_line_at_the_end(tmp_path: Path) -> None:
    output = Output("r1", str(tmp_path / "output"), 1 << 20)
    output.feed(b"one\ntw")
    assert lines_of(tmp_path / "output") == ["one"]
    output.feed(b"o\nthr")
    assert lines_of(tmp_path / "output") == ["one", "two"]
    output.finish()
    assert lines_of(tmp_path / "output") == ["one", "two", "thr"]
    assert all(line.timestamp.endswith("Z") for line in parse((tmp_path / "output").read_text()))


def test_a_long_line_is_cut_into_pieces_even_before_it_ends(tmp_path: Path) -> None:
    output = Output("r1", str(tmp_path / "output"), 1 << 24)
    output.feed(b"x" * (PIECE_BYTES + 10))
    assert lines_of(tmp_path / "output") == ["x" * PIECE_BYTES]
    output.feed(b"y\n" + b"z" * (2 * PIECE_BYTES) + b"\n")
    output.finish()
    assert lines_of(tmp_path / "output") == [
        "x" * PIECE_BYTES,
        "x" * 10 + "y",
        "z" * PIECE_BYTES,
        "z" * PIECE_BYTES,
    ]


def test_the_output_rotates_at_half_its_cap_and_keeps_the_newest(tmp_path: Path) -> None:
    output = Output("r1", str(tmp_path / "output"), 2048)
    output.feed(b"".join(f"line-{i}\n".encode() for i in range(100)))
    output.finish()
    kept = lines_of(tmp_path / "output.1") + lines_of(tmp_path / "output")
    assert sum(p.stat().st_size for p in tmp_path.glob("output*")) <= 2048
    assert kept == [f"line-{i}" for i in range(100 - len(kept), 100)]
    assert (tmp_path / "output").stat().st_size <= 1024
