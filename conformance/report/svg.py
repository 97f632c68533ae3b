"""Small inline SVG charts: error histograms, the pass-rate trend, per-op speed.

Every function returns ``Markup``; every piece of text taken from the results is escaped.
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

#: Colour-blind-friendly (Okabe-Ito), one per backend in the order they are listed.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999")
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def bin_order(label: str) -> float:
    """Sort key of a histogram bin: "0" < decades ascending < "inf" < "nan"."""
    if label == "0":
        return -math.inf
    if label == "nan":
        return math.inf
    if label == "inf":
        return 1e300
    return float(label.partition("e")[2])  # "1e-324" is a decade too, though 1e-324 == 0.0


def bin_range(labels) -> list[str]:
    """All bins from the smallest to the largest decade in ``labels`` (gaps filled), with
    "0", "inf" and "nan" kept only when present."""
    labels = set(labels)
    decades = [int(bin_order(b)) for b in labels if b not in ("0", "inf", "nan")]
    middle = [f"1e{d}" for d in range(min(decades), max(decades) + 1)] if decades else []
    return [*(["0"] if "0" in labels else []), *middle,
            *[b for b in ("inf", "nan") if b in labels]]


def _bin_text(label: str) -> str:
    if label in ("0", "inf", "nan"):
        return label
    return f"[{label}, 1e{int(bin_order(label)) + 1})"


def _short(label: str) -> str:
    return label.replace("1e", "e") if label not in ("0", "inf", "nan") else label


def _text(x, y, text, anchor="start", extra="", limit: int = 0) -> str:
    """An SVG text; beyond ``limit`` characters it is cut, the whole text kept as a tooltip."""
    shown = text if not limit or len(text) <= limit else text[:limit - 1] + "…"
    tip = f"<title>{escape(text)}</title>" if shown != text else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{tip}'
            f"{escape(shown)}</text>")


def _duration(decade: int) -> str:
    """10**decade microseconds, readably."""
    unit, scale = next(((u, s) for u, s in (("s", 6), ("ms", 3)) if decade >= s), ("µs", 0))
    return f"{10.0 ** (decade - scale):g} {unit}"


def histogram_strips(series, bins, *, metric: str, width_label: int = 120) -> Markup:
    """One row of bars per ``(label, colour, {bin: count})`` in ``series`` over shared
    ``bins``; bar heights grow with log(1 + count), scaled to the row's largest bin, so a
    handful of large errors still shows next to many exact examples."""
    if not series or not bins:
        return Markup("")
    bw, rh, top = 24, 20, 4
    width = width_label + bw * len(bins) + 8
    height = top + rh * len(series) + 16
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" {FONT} role="img">',
             f"<title>{escape(metric)} error per example: histogram per backend</title>"]
    for row, (label, fill, hist) in enumerate(series):
        y0 = top + row * rh
        total = sum(hist.values()) or 1
        peak = max(hist.values(), default=0) or 1
        parts.append(_text(width_label - 6, y0 + rh - 7, label, "end", limit=width_label // 7))
        parts.append(f'<line x1="{width_label}" x2="{width - 8}" y1="{y0 + rh - 2}" '
                     f'y2="{y0 + rh - 2}" stroke="#ccc"/>')
        for col, b in enumerate(bins):
            n = hist.get(b, 0)
            if not n:
                continue
            h = max(2.0, (rh - 4) * math.log1p(n) / math.log1p(peak))
            x = width_label + col * bw + 2
            tip = f"{label}: {n} of {total} examples with {metric} error {_bin_text(b)}"
            parts.append(f'<rect x="{x}" y="{y0 + rh - 2 - h:.1f}" width="{bw - 4}" '
                         f'height="{h:.1f}" fill="{fill}"><title>{escape(tip)}</title></rect>')
    axis_y = top + rh * len(series) + 12
    for col, b in enumerate(bins):
        parts.append(_text(width_label + col * bw + bw / 2, axis_y, _short(b), "middle",
                           'fill="#555" font-size="9"'))
    parts.append("</svg>")
    return Markup("".join(parts))


def line_chart(points, *, width_per_point: int = 110) -> Markup:
    """A pass-rate line over runs: ``points`` are ``(label, rate in [0, 1] or None)``."""
    points = list(points)
    if not points:
        return Markup("")
    left, right, top, bottom = 64, 56, 14, 40
    width = max(360, left + right + width_per_point * max(len(points) - 1, 1))
    height = 200
    span_x = width - left - right
    span_y = height - top - bottom
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" {FONT} role="img">',
             "<title>share of tests passing or failing as expected, per run</title>"]
    for pct in (0, 25, 50, 75, 100):
        y = top + span_y * (1 - pct / 100)
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="#e3e3e3"/>')
        parts.append(_text(left - 6, y + 4, f"{pct}%", "end", 'fill="#555"'))
    xy = []
    for i, (label, rate) in enumerate(points):
        x = left + (span_x * i / (len(points) - 1) if len(points) > 1 else span_x / 2)
        parts.append(_text(x, height - bottom + 16, label[:18], "middle", 'fill="#333"'))
        if rate is not None:
            xy.append((x, top + span_y * (1 - rate), label, rate))
    if len(xy) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in xy)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{PALETTE[0]}" '
                     'stroke-width="2"/>')
    for x, y, label, rate in xy:
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{PALETTE[0]}">'
                     f"<title>{escape(label)}: {rate:.1%}</title></circle>")
        parts.append(_text(x, y - 8, f"{rate:.1%}", "middle", 'font-weight="bold"'))
    parts.append("</svg>")
    return Markup("".join(parts))


def dot_plot(rows, backends, *, width_label: int = 190) -> Markup:
    """One row per ``(label, {backend: microseconds})``, one dot per backend, log x axis."""
    values = [v for _, d in rows for v in d.values() if v and 0 < v < math.inf]
    if not values:
        return Markup("")
    lo = math.floor(math.log10(min(values)))
    hi = max(math.ceil(math.log10(max(values))), lo + 1)
    rh, top, plot_w = 16, 22, 520
    width = width_label + plot_w + 20
    height = top + rh * len(rows) + 10

    def px(v):
        return width_label + plot_w * (math.log10(v) - lo) / (hi - lo)

    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" {FONT} role="img">',
             "<title>median time per call, log scale</title>"]
    for d in range(lo, hi + 1):
        x = width_label + plot_w * (d - lo) / (hi - lo)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 4}" y2="{height - 6}" '
                     f'stroke="#e3e3e3"/>')
        parts.append(_text(x, top - 8, _duration(d), "middle", 'fill="#555"'))
    for i, (label, by_backend) in enumerate(rows):
        y = top + i * rh + rh / 2
        parts.append(_text(width_label - 8, y + 4, label, "end", limit=width_label // 7))
        for j, backend in enumerate(backends):
            v = by_backend.get(backend)
            if v and 0 < v < math.inf:
                tip = f"{label} on {backend}: {v:.3g} µs"
                parts.append(f'<circle cx="{px(v):.1f}" cy="{y:.1f}" r="4" fill="{color(j)}" '
                             f'fill-opacity="0.85"><title>{escape(tip)}</title></circle>')
    parts.append("</svg>")
    return Markup("".join(parts))
