"""The HTML report's SVG charts: the page composition, cluster sizes, the top hosts (see :mod:`.html`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _fmt
from .escapes import shown
from .html_cells import _e, _map, _str
from .schema import STATUSES

#: Hosts in the "most duplicates" chart.
TOP_HOSTS = 10

_COLORS = {"unique": "#4c78a8", "exact": "#d62728", "near": "#f28e2b", "skipped": "#9d9d9d"}
_LABELS = {"unique": "unique", "exact": "exact duplicates", "near": "near duplicates", "skipped": "skipped"}


def _nice_step(maximum: int, ticks: int = 4) -> int:
    """A round tick step so that about ``ticks`` steps cover ``maximum``."""
    raw = max(maximum / ticks, 1.0)
    magnitude = 10 ** (len(str(int(raw))) - 1)
    for factor in (1, 2, 5, 10):
        if factor * magnitude >= raw:
            return int(factor * magnitude)
    return int(10 * magnitude)  # pragma: no cover - the loop always returns


def _composition_svg(totals: Mapping[str, Any]) -> str:
    """A stacked horizontal bar of unique / exact / near / skipped pages."""
    parts = [(status, _fmt.as_int(totals.get(status))) for status in STATUSES]
    whole = sum(n for _, n in parts)
    width, height = 640, 34
    out = [
        f'<svg class="bar-chart" id="composition" viewBox="0 0 {width} {height}" preserveAspectRatio="none" '
        f'role="img" aria-label="Pages by verdict">'
    ]
    if not whole:
        out.append(f'<rect x="0" y="4" width="{width}" height="22" rx="4" fill="var(--bar)"/>')
    x = 0.0
    for status, n in parts:
        if not n:
            continue
        w = width * n / whole
        out.append(
            f'<rect x="{x:.2f}" y="4" width="{max(w, 1.0):.2f}" height="22" fill="{_COLORS[status]}">'
            f"<title>{_e(_LABELS[status])}: {_fmt.count(n)} ({_fmt.percent(n, whole)})</title></rect>"
        )
        x += w
    out.append("</svg>")
    legend = "".join(
        f'<span><i class="dot" style="background:{_COLORS[s]}"></i>{_e(_LABELS[s])} '
        f"{_fmt.count(n)} ({_fmt.percent(n, whole)})</span>"
        for s, n in parts
    )
    return "".join(out) + f'<div class="legend">{legend}</div>'


def _histogram_svg(cluster_sizes: Any) -> str:
    """Bars of the number of clusters per cluster size, with axes and labels."""
    bins = _fmt.size_bins(cluster_sizes)
    if not bins:
        return '<p class="note">No clusters of two or more pages.</p>'
    width, height = 480, 260
    left, right, top, bottom = 50, 8, 18, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(n for _, n in bins) or 1
    step = _nice_step(peak)
    y_max = step * -(-peak // step)
    slot = plot_w / len(bins)
    bar_w = max(min(slot * 0.7, 60.0), 2.0)
    out = [
        f'<svg class="chart" id="histogram" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Number of clusters by cluster size">'
    ]
    for tick in range(0, y_max + 1, step):
        y = top + plot_h - plot_h * tick / y_max
        out.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt.count(tick)}</text>')
    out.append(
        f'<line class="axis" x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}"/>'
    )
    for i, (label, n) in enumerate(bins):
        cx = left + slot * (i + 0.5)
        h = plot_h * n / y_max
        if n and h < 1.5:
            h = 1.5
        y = top + plot_h - h
        out.append(
            f'<rect x="{cx - bar_w / 2:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" rx="2" '
            f'fill="{_COLORS["unique"]}"><title>size {_e(label)}: {_fmt.count(n)} clusters</title></rect>'
        )
        if n:
            out.append(
                f'<text class="val" x="{cx:.1f}" y="{y - 4:.1f}" text-anchor="middle">{_fmt.count(n)}</text>'
            )
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 15}" text-anchor="middle">{_e(label)}</text>')
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">'
        "cluster size (pages per cluster)</text>"
    )
    out.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">clusters</text>'
    )
    out.append("</svg>")
    return "".join(out)


def _top_hosts_svg(hosts: list[Any], rows: int = TOP_HOSTS) -> str:
    """Horizontal stacked bars (exact + near) of the listed hosts with most duplicates."""
    ranked = sorted(
        (_map(h) for h in hosts),
        key=lambda h: -(_fmt.as_int(h.get("exact")) + _fmt.as_int(h.get("near"))),
    )
    ranked = [h for h in ranked[:rows] if _fmt.as_int(h.get("exact")) + _fmt.as_int(h.get("near"))]
    if not ranked:
        return '<p class="note">No duplicates.</p>'
    width, row_h, label_w, value_w = 480, 22, 180, 50
    height = row_h * len(ranked) + 8
    plot_w = width - label_w - value_w
    peak = max(_fmt.as_int(h.get("exact")) + _fmt.as_int(h.get("near")) for h in ranked) or 1
    out = [
        f'<svg class="chart" id="top-hosts" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Hosts with most duplicate pages">'
    ]
    for i, h in enumerate(ranked):
        y = 4 + i * row_h
        exact, near = _fmt.as_int(h.get("exact")), _fmt.as_int(h.get("near"))
        name = shown(_str(h.get("host")))
        out.append(
            f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end" direction="ltr" unicode-bidi="isolate">'
            f"{_e(_fmt.clip(name, 25))}<title>{_e(_fmt.clip(name, 200))}</title></text>"
        )
        x = float(label_w)
        for status, n in (("exact", exact), ("near", near)):
            if not n:
                continue
            w = max(plot_w * n / peak, 1.0)
            out.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" '
                f'fill="{_COLORS[status]}"><title>{_e(_fmt.clip(name, 200))}: '
                f"{_fmt.count(n)} {status}</title></rect>"
            )
            x += w
        out.append(f'<text class="val" x="{x + 5:.1f}" y="{y + 14}">{_fmt.count(exact + near)}</text>')
    out.append("</svg>")
    legend = "".join(
        f'<span><i class="dot" style="background:{_COLORS[s]}"></i>{_e(_LABELS[s])}</span>'
        for s in ("exact", "near")
    )
    return "".join(out) + f'<div class="legend">{legend}</div>'


# -- sections ----------------------------------------------------------------------------------
