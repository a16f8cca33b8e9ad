"""Render every Grafana dashboard in deploy/grafana from real data, as SVG (Grafana is not
packaged for Debian, so the panels are drawn here from the same queries).

    python bench/dashboards.py --out docs/img --batches 20

Starts ``armada serve --dev`` and Debian's Prometheus scraping it every second, runs batches
of short jobs beside two long ones, then draws each panel's series (``query_range`` over the
run, one point a second) as lines on a grid: one ``dashboard-<name>.svg`` per dashboard.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from html import escape
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.prometheus import DASHBOARDS, Stack, flow_jobs, panels, prometheus_stack, query

WIDTH, HEIGHT, COLUMNS, LEGEND = 560, 230, 2, 5
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")

Series = tuple[str, list[tuple[float, float]]]


def _legend(template: str, labels: dict[str, str]) -> str:
    for name, label in labels.items():
        template = template.replace("{{" + name + "}}", label)
    return template


def _series(stack: Stack, targets: list[tuple[str, str]], start: float, end: float) -> list[Series]:
    found: list[Series] = []
    for expr, legend in targets:
        for item in query(stack, expr, start=start, end=end, step=1)["result"]:
            points = [(float(t), float(v)) for t, v in item["values"] if math.isfinite(float(v))]
            if points:
                found.append((_legend(legend, item["metric"]), points))
    return found


def _panel(title: str, series: list[Series], start: float, end: float, x: int, y: int) -> str:
    left, top, plot_w, plot_h = x + 50, y + 28, WIDTH - 70, HEIGHT - 60 - 14 * min(len(series), LEGEND) // 2
    values = [v for _, points in series for _, v in points] or [0.0]
    low, high = min(0.0, *values), max(values)
    high = high if high > low else low + 1
    parts = [
        f'<rect x="{x + 4}" y="{y + 4}" width="{WIDTH - 8}" height="{HEIGHT - 8}" fill="#fff"/>',
        f'<text x="{x + 12}" y="{y + 20}" font-weight="bold">{escape(title)}</text>',
        f'<text x="{x + 8}" y="{top + 4}" font-size="10">{high:.3g}</text>',
        f'<text x="{x + 8}" y="{top + plot_h}" font-size="10">{low:.3g}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
    ]
    for index, (name, points) in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        scale_x, scale_y = plot_w / (end - start), plot_h / (high - low)
        xy = " ".join(
            f"{left + scale_x * (t - start):.1f},{top + plot_h - scale_y * (v - low):.1f}" for t, v in points
        )
        parts.append(f'<polyline points="{xy}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        if index < LEGEND:
            ly = top + plot_h + 16 + 14 * (index // 2)
            lx = left + (index % 2) * plot_w // 2
            parts.append(f'<text x="{lx}" y="{ly}" font-size="10" fill="{colour}">{escape(name[:48])}</text>')
    if not series:
        parts.append(f'<text x="{left + 10}" y="{top + plot_h // 2}" fill="#c00">no data</text>')
    return "\n".join(parts)


def render(stack: Stack, dashboard: Path, start: float, end: float) -> str:
    drawn = [
        _panel(
            title,
            _series(stack, targets, start, end),
            start,
            end,
            (i % COLUMNS) * WIDTH,
            30 + (i // COLUMNS) * HEIGHT,
        )
        for i, (title, targets) in enumerate(panels(dashboard))
    ]
    rows = math.ceil(len(drawn) / COLUMNS)
    title = f"{dashboard.stem}: rendered from Prometheus by bench/dashboards.py"
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{COLUMNS * WIDTH}" height="{30 + rows * HEIGHT}"'
            ' font-family="sans-serif" font-size="12">',
            f'<rect width="100%" height="100%" fill="#f4f5f5"/><text x="10" y="20">{escape(title)}</text>',
            *drawn,
            "</svg>\n",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    parser.add_argument("--batches", type=int, default=20, help="batches of three short jobs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, prometheus_stack(Path(tmp)) as stack:
        start = time.time()
        flow_jobs(stack, batches=args.batches)
        time.sleep(5)  # a few more scrapes after the last batch
        end = time.time()
        for dashboard in DASHBOARDS:
            path = args.out / f"dashboard-{dashboard.stem}.svg"
            path.write_text(render(stack, dashboard, start, end))
            print(path)


if __name__ == "__main__":
    main()
