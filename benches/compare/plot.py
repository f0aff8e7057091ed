#!/usr/bin/env python3
"""Scaling plot for the side-by-side benchmark, as a hand-written SVG (standard library
only, so the figure regenerates anywhere without plotting packages).

Two panels, schedule and cancel ns/op against the number of pending tasks, log-log; one
line per system through the medians, with a bar from min to max at each size.

    python3 plot.py RESULTS.jsonl OUT.svg

`run.py` calls `write_scaling_svg` directly after a run.
"""

import json
import math
import sys
from collections import defaultdict
from statistics import median

# Fixed colours per system so figures from different runs compare at a glance.
COLOURS = {
    "schedpool": "#d62728",
    "stp": "#9467bd",
    "tokio": "#8c564b",
    "stpe17": "#1f77b4",
    "stpe25": "#17becf",
    "fjp25": "#2ca02c",
}
LABELS = {
    "schedpool": "schedpool",
    "stp": "scheduled-thread-pool",
    "tokio": "tokio",
    "stpe17": "Java 17 STPE",
    "stpe25": "Java 25 STPE",
    "fjp25": "Java 25 ForkJoinPool",
}

W, H = 960, 420
PANEL_W, PANEL_H = 380, 300
MARGIN_L, MARGIN_T = 70, 50
GAP = 90


def scaling_series(rows):
    """{system: {metric: {size: [values over repeats]}}} from result rows."""
    out = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        if row["workload"] != "scaling":
            continue
        res = row["result"]
        if "sizes" not in res:
            continue
        for metric in ("schedule_ns_per_op", "cancel_ns_per_op"):
            for size, value in zip(res["sizes"], res[metric]):
                out[row["system"]][metric][size].append(value)
    return out


def _ticks(lo, hi):
    """1-2-5 ticks covering [lo, hi] on a log axis."""
    ticks = []
    e = math.floor(math.log10(lo))
    while 10 ** e <= hi * 10:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
        e += 1
    return ticks


def _fmt(v):
    if v >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def _panel(svg, x0, y0, title, data, order, ylo, yhi, xs):
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    pad = 0.06 * (lx1 - lx0)  # room for the outermost points and their labels
    lx0, lx1 = lx0 - pad, lx1 + pad
    ly0, ly1 = math.log10(ylo), math.log10(yhi)

    def px(x):
        return x0 + (math.log10(x) - lx0) / (lx1 - lx0) * PANEL_W

    def py(y):
        return y0 + PANEL_H - (math.log10(y) - ly0) / (ly1 - ly0) * PANEL_H

    svg.append(f'<text x="{x0 + PANEL_W / 2}" y="{y0 - 14}" text-anchor="middle" '
               f'font-size="15" font-weight="bold">{title}</text>')
    svg.append(f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" '
               f'fill="none" stroke="#444"/>')
    for t in _ticks(ylo, yhi):
        y = py(t)
        svg.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" '
                   f'stroke="#ddd"/>')
        svg.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" '
                   f'font-size="11">{_fmt(t)}</text>')
    for x in xs:
        X = px(x)
        svg.append(f'<line x1="{X:.1f}" y1="{y0}" x2="{X:.1f}" y2="{y0 + PANEL_H}" '
                   f'stroke="#eee"/>')
        svg.append(f'<text x="{X:.1f}" y="{y0 + PANEL_H + 16}" text-anchor="middle" '
                   f'font-size="11">10<tspan dy="-5" font-size="8">'
                   f'{round(math.log10(x))}</tspan></text>')
    svg.append(f'<text x="{x0 + PANEL_W / 2}" y="{y0 + PANEL_H + 36}" text-anchor="middle" '
               f'font-size="12">tasks pending</text>')
    svg.append(f'<text x="{x0 - 48}" y="{y0 + PANEL_H / 2}" text-anchor="middle" '
               f'font-size="12" transform="rotate(-90 {x0 - 48} {y0 + PANEL_H / 2})">'
               f'ns per operation (log)</text>')
    for rank, system in enumerate(order):
        # Each system's points sit a few pixels apart, so the min–max bars stay readable.
        dodge = (rank - (len(order) - 1) / 2) * 4
        points = data.get(system)
        if not points:
            continue
        colour = COLOURS.get(system, "#333")
        width = 3 if system == "schedpool" else 1.6
        pts = []
        for size in sorted(points):
            vals = [v for v in points[size] if v and v > 0]
            if not vals:
                continue
            med, lo, hi = median(vals), min(vals), max(vals)
            X = px(size) + dodge
            pts.append(f"{X:.1f},{py(med):.1f}")
            if hi > lo:
                svg.append(f'<line x1="{X:.1f}" y1="{py(lo):.1f}" x2="{X:.1f}" '
                           f'y2="{py(hi):.1f}" stroke="{colour}" stroke-width="1"/>')
            svg.append(f'<circle cx="{X:.1f}" cy="{py(med):.1f}" r="3.5" fill="{colour}"/>')
        if len(pts) > 1:
            svg.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" '
                       f'stroke-width="{width}"/>')


def write_scaling_svg(rows, path, subtitle=""):
    """Writes the two-panel plot for the scaling rows; returns False if there is no data."""
    series = scaling_series(rows)
    if not series:
        return False
    order = [s for s in COLOURS if s in series] + [s for s in series if s not in COLOURS]
    values = [v for s in series.values() for m in s.values() for vs in m.values()
              for v in vs if v and v > 0]
    xs = sorted({size for s in series.values() for m in s.values() for size in m})
    ylo = 10 ** math.floor(math.log10(min(values)))
    yhi = 10 ** math.ceil(math.log10(max(values)))
    legend_h = 22 * ((len(order) + 2) // 3)
    height = H + legend_h
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
           f'viewBox="0 0 {W} {height}" font-family="sans-serif">',
           f'<rect width="{W}" height="{height}" fill="white"/>']
    if subtitle:
        svg.append(f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="12" '
                   f'fill="#555">{subtitle}</text>')
    for i, (metric, title) in enumerate((("schedule_ns_per_op", "schedule"),
                                         ("cancel_ns_per_op", "cancel"))):
        data = {s: series[s][metric] for s in series}
        _panel(svg, MARGIN_L + i * (PANEL_W + GAP), MARGIN_T, title + " (ns/op)", data,
               order, ylo, yhi, xs)
    ly = MARGIN_T + PANEL_H + 60
    for i, system in enumerate(order):
        x = MARGIN_L + (i % 3) * 290
        y = ly + (i // 3) * 22
        colour = COLOURS.get(system, "#333")
        width = 3 if system == "schedpool" else 1.6
        svg.append(f'<line x1="{x}" y1="{y}" x2="{x + 28}" y2="{y}" stroke="{colour}" '
                   f'stroke-width="{width}"/>')
        svg.append(f'<circle cx="{x + 14}" cy="{y}" r="3.5" fill="{colour}"/>')
        svg.append(f'<text x="{x + 36}" y="{y + 4}" font-size="12">'
                   f'{LABELS.get(system, system)}</text>')
    svg.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(svg) + "\n")
    return True


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py RESULTS.jsonl OUT.svg")
    with open(sys.argv[1], encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if not write_scaling_svg(rows, sys.argv[2]):
        sys.exit("no scaling results in " + sys.argv[1])


if __name__ == "__main__":
    main()
