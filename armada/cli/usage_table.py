"""``armada report usage``'s table and CSV: one line per group, like ``sreport``."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from armada.model.wire.usage import WaitFigures

if TYPE_CHECKING:
    from armada.model.wire.usage import UsageResponse, UsageRow

#: Resources shown, with the unit they are shown in (hours of cores, GiB, GPUs, jobs).
SHOWN = (
    ("cpu", "cpu-h", 3600.0),
    ("memory", "mem-GiB-h", 3600.0 * 2**30),
    ("nvidia.com/gpu", "gpu-h", 3600.0),
)
JOBS = ("jobs", "jobs-h", 3600.0)


def _columns(report: UsageResponse) -> list[tuple[str, str, float]]:
    """The resources of the report: the usual three, then any other (custom) ones."""
    seen = {resource for row in report.rows for resource in row.used}
    usual = [shown for shown in SHOWN if shown[0] in seen]
    named = {shown[0] for shown in (*SHOWN, JOBS)}
    custom = [(name, f"{name}-h", 3600.0) for name in sorted(seen - named)]
    return usual + custom + ([JOBS] if JOBS[0] in seen else [])


def _cells(report: UsageResponse, row: UsageRow, columns: list[tuple[str, str, float]]) -> list[str]:
    cells = [row.key[name] for name in report.by]
    for resource, _label, scale in columns:
        cells += [
            f"{row.used.get(resource, 0.0) / scale:.2f}",
            f"{100 * row.share.get(resource, 0.0):.1f}",
            f"{row.lost.get(resource, 0.0) / scale:.2f}",
            f"{row.preempted.get(resource, 0.0) / scale:.2f}",
        ]
    waits = row.waits or WaitFigures()
    return [
        *cells,
        str(waits.leases),
        f"{waits.mean:.1f}",
        f"{waits.p50:g}",
        f"{waits.p90:g}",
        f"{waits.p99:g}",
    ]


def _header(report: UsageResponse, columns: list[tuple[str, str, float]]) -> list[str]:
    names = list(report.by)
    for _resource, label, _scale in columns:
        names += [label, f"{label}-share%", f"{label}-lost", f"{label}-preempted"]
    return [*names, "leases", "wait-mean-s", "wait-p50-s", "wait-p90-s", "wait-p99-s"]


def render_csv(report: UsageResponse) -> str:
    columns = _columns(report)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_header(report, columns))
    for row in report.rows:
        writer.writerow(_cells(report, row, columns))
    return out.getvalue()


def render_table(report: UsageResponse) -> str:
    columns = _columns(report)
    lines = [_header(report, columns)] + [_cells(report, row, columns) for row in report.rows]
    widths = [max(len(line[index]) for line in lines) for index in range(len(lines[0]))]
    title = f"Usage {report.since} .. {report.until} by {','.join(report.by) or '(everything)'}"
    body = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    return "\n".join([title, "-" * len(title), *body])
