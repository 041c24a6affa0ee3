"""A tiny, dependency-free SVG line plot: NCCL bus bandwidth vs message size.

x is log2(message size) (0-byte rows are left out: they have no place on a log axis), y is linear
GB/s from 0.  An optional horizontal threshold line is drawn dashed with its label, and an
optional pass bound (the threshold after tolerance) dotted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

WIDTH = 720
HEIGHT = 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 20, 40, 60
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_size(size: int) -> str:
    """``1024`` → ``1KiB``, ``17179869184`` → ``16GiB`` (binary units, no decimals when exact)."""
    value = float(size)
    unit = 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    text = f"{value:.0f}" if value == int(value) else f"{value:.1f}"
    return f"{text}{_UNITS[unit]}"


def _nice_step(span: float) -> float:
    raw = span / 5
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * magnitude:
            return float(mult * magnitude)
    return float(10 * magnitude)  # pragma: no cover


def busbw_svg(
    rows: Sequence[tuple[int, float]],
    *,
    title: str,
    threshold: float | None = None,
    threshold_label: str | None = None,
    pass_bound: float | None = None,
) -> str:
    """SVG text plotting ``(size_bytes, busbw_gbps)`` rows."""
    points = sorted((s, b) for s, b in rows if s > 0 and math.isfinite(b))
    plot_w = WIDTH - _LEFT - _RIGHT
    plot_h = HEIGHT - _TOP - _BOTTOM
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2:.0f}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
    ]
    if not points:
        out.append(
            f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle">no data rows</text></svg>'
        )
        return "\n".join(out) + "\n"

    x_lo = math.floor(math.log2(points[0][0]))
    x_hi = math.ceil(math.log2(points[-1][0]))
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    y_top = max([b for _, b in points] + [v for v in (threshold, pass_bound) if v is not None] + [1.0])
    step = _nice_step(y_top * 1.1)
    y_hi = step * math.ceil(y_top * 1.1 / step)

    def px(size: float) -> float:
        return _LEFT + (math.log2(size) - x_lo) / (x_hi - x_lo) * plot_w

    def py(value: float) -> float:
        return _TOP + plot_h - value / y_hi * plot_h

    # axes and grid
    out.append('<g stroke="#ccc" stroke-width="1">')
    tick = 0.0
    while tick <= y_hi + 1e-9:
        y = py(tick)
        out.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}"/>')
        tick += step
    out.append("</g>")
    out.append(
        f'<g stroke="black" stroke-width="1"><line x1="{_LEFT}" y1="{_TOP + plot_h}" '
        f'x2="{_LEFT + plot_w}" y2="{_TOP + plot_h}"/>'
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}"/></g>'
    )
    tick = 0.0
    while tick <= y_hi + 1e-9:
        out.append(f'<text x="{_LEFT - 6}" y="{py(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += step
    every = max(1, math.ceil((x_hi - x_lo) / 12))
    for exp in range(x_lo, x_hi + 1, every):
        x = px(2.0**exp)
        out.append(
            f'<text x="{x:.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">{format_size(2**exp)}</text>'
        )
    out.append(
        f'<text x="{_LEFT + plot_w / 2:.0f}" y="{HEIGHT - 14}" text-anchor="middle">'
        "message size (log2)</text>"
    )
    out.append(
        f'<text x="16" y="{_TOP + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {_TOP + plot_h / 2:.0f})">busbw (GB/s)</text>'
    )
    # threshold and pass bound
    if threshold is not None:
        y = py(threshold)
        label = threshold_label or f"threshold {threshold:g} GB/s"
        out.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" stroke="#d62728" '
            f'stroke-width="1.5" stroke-dasharray="6 4"/>'
        )
        out.append(
            f'<text x="{_LEFT + plot_w - 4}" y="{y - 5:.1f}" text-anchor="end" fill="#d62728">'
            f"{escape(label)}</text>"
        )
    if pass_bound is not None:
        y = py(pass_bound)
        out.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" stroke="#ff7f0e" '
            f'stroke-width="1" stroke-dasharray="2 3"/>'
        )
        out.append(
            f'<text x="{_LEFT + 4}" y="{y - 5:.1f}" fill="#ff7f0e">pass bound {pass_bound:g} GB/s</text>'
        )
    # the sweep
    path = " ".join(f"{px(s):.1f},{py(b):.1f}" for s, b in points)
    out.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for s, b in points:
        out.append(
            f'<circle cx="{px(s):.1f}" cy="{py(b):.1f}" r="3" fill="#1f77b4">'
            f"<title>{format_size(s)}: {b:.2f} GB/s</title></circle>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = ["busbw_svg", "format_size"]
