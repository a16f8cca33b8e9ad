"""A :class:`Comparison` as text (the terminal) and as a self-contained HTML page with charts."""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime

from armada.services.simulation.figures import QueueFigures
from armada.services.simulation.whatif import Comparison

_COLOURS = {"recorded": "#6b7280", "current": "#2563eb", "candidate": "#d97706"}


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


#: (label, value of a queue's figures as text): the per-queue rows, one column per scenario.
_ROWS: list[tuple[str, Callable[[QueueFigures], str]]] = [
    ("jobs started", lambda q: f"{q.started}/{q.jobs}"),
    ("mean wait", lambda q: _duration(q.mean_wait)),
    ("p50 wait", lambda q: _duration(q.p50_wait)),
    ("p90 wait", lambda q: _duration(q.p90_wait)),
    ("preemptions", lambda q: str(q.preemptions)),
    ("lost cpu-hours", lambda q: f"{q.lost_resource_seconds.get('cpu', 0.0) / 3600:.1f}"),
]


def _share(q: QueueFigures | None, pool: str) -> str:
    return f"{q.share.get(pool, 0):.0%} / {q.fair_share.get(pool, 0):.0%}" if q else "-"


def render_text(comparison: Comparison) -> str:
    names = [s.name for s in comparison.scenarios]
    width = max(12, *(len(n) for n in names))
    lines = [
        f"Replay of {_when(comparison.since)} .. {_when(comparison.until)}: {comparison.jobs} jobs",
        "  ".join(f"{s.name}: {s.cycles} cycles in {s.seconds:.1f}s" for s in comparison.scenarios[1:]),
    ]
    header = f"{'':<24}" + "".join(f"{n:>{width}}" for n in names)
    queues = sorted({q for s in comparison.scenarios for q in s.figures.queues})
    for queue in queues:
        lines += ["", f"queue {queue}", header]
        found = [s.figures.queues.get(queue) for s in comparison.scenarios]
        for label, value in _ROWS:
            lines.append(f"  {label:<22}" + "".join(f"{value(q) if q else '-':>{width}}" for q in found))
        for pool in sorted({p for q in found if q for p in q.share}):
            cells = [
                f"{q.share.get(pool, 0):.0%} / {q.fair_share.get(pool, 0):.0%}" if q else "-" for q in found
            ]
            lines.append(f"  {'share / fair ' + pool:<22}" + "".join(f"{c:>{width}}" for c in cells))
    pools = sorted({p for s in comparison.scenarios for p in s.figures.pools})
    for pool in pools:
        lines += ["", f"pool {pool} utilisation", header]
        found_pools = [s.figures.pools.get(pool) for s in comparison.scenarios]
        resources = sorted({r for p in found_pools if p for r in p.utilisation})
        for resource in resources:
            cells = [f"{p.utilisation.get(resource, 0):.1%}" if p else "-" for p in found_pools]
            lines.append(f"  {resource:<22}" + "".join(f"{c:>{width}}" for c in cells))
    return "\n".join(lines)


def render_html(comparison: Comparison) -> str:
    """A standalone page: the text table and one bar chart per figure (inline SVG, no scripts)."""
    queues = sorted({q for s in comparison.scenarios for q in s.figures.queues})
    longest = max((q.p90_wait for s in comparison.scenarios for q in s.figures.queues.values()), default=0.0)
    unit, size = ("minutes", 60.0) if longest >= 120 else ("seconds", 1.0)
    charts = [
        _bars(comparison, queues, f"Mean wait ({unit})", lambda q: q.mean_wait / size),
        _bars(comparison, queues, f"p90 wait ({unit})", lambda q: q.p90_wait / size),
        _bars(comparison, queues, "Preemptions", lambda q: float(q.preemptions)),
    ]
    pools = sorted({p for s in comparison.scenarios for q in s.figures.queues.values() for p in q.share})
    for pool in pools:

        def share(q: QueueFigures, pool: str = pool) -> float:
            return 100 * q.share.get(pool, 0)

        charts.append(_bars(comparison, queues, f"Share of pool {pool} (%)", share))
    legend = " ".join(
        f'<span style="color:{_COLOURS.get(s.name, "#000")}">&#9632; {html.escape(s.name)}</span>'
        for s in comparison.scenarios
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>armada simulate</title>"
        "<style>body{font-family:sans-serif;margin:2em}svg{margin:1em 1em 0 0}"
        "pre{background:#f3f4f6;padding:1em}</style></head><body>"
        f"<h1>What-if replay</h1><p>{legend}</p>{''.join(charts)}"
        f"<pre>{html.escape(render_text(comparison))}</pre></body></html>"
    )


def _bars(
    comparison: Comparison, queues: list[str], title: str, value: Callable[[QueueFigures], float]
) -> str:
    scenarios = comparison.scenarios
    values = [[value(q) if (q := s.figures.queues.get(name)) else 0.0 for s in scenarios] for name in queues]
    top = max((v for row in values for v in row), default=0.0) or 1.0
    bar, gap, height = 18, 14, 160
    width = 40 + len(queues) * (len(scenarios) * bar + gap)
    parts = [f'<text x="0" y="14" font-size="13">{html.escape(title)}</text>']
    for i, (name, row) in enumerate(zip(queues, values, strict=True)):
        x0 = 40 + i * (len(scenarios) * bar + gap)
        for j, (scenario, v) in enumerate(zip(scenarios, row, strict=True)):
            h = height * v / top
            parts.append(
                f'<rect x="{x0 + j * bar}" y="{30 + height - h:.1f}" width="{bar - 2}" height="{h:.1f}" '
                f'fill="{_COLOURS.get(scenario.name, "#000")}"><title>{html.escape(scenario.name)} '
                f"{html.escape(name)}: {v:.2f}</title></rect>"
            )
        parts.append(f'<text x="{x0}" y="{height + 46}" font-size="11">{html.escape(name)}</text>')
    parts.append(f'<text x="0" y="40" font-size="10">{top:.3g}</text>')
    size = f'width="{width}" height="{height + 56}"'
    return f'<svg xmlns="http://www.w3.org/2000/svg" {size}>{"".join(parts)}</svg>'
