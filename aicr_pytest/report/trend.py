"""What ``aicr-pytest history`` and ``aicr-pytest compare`` print (pure: records in, text out).

* :func:`run_lines`: one line per run — time, run id, recipe, verdict per phase, headline figures
  (the values checks judged against a constraint, not durations or health counts);
* :func:`trends`: per check and value, min / median / last over the runs, oldest to newest;
* :func:`trend_svg`: one value's trend as an SVG line plot (the NCCL sweep plot's style);
* :func:`compare_rows`: two CTRF documents side by side — checks whose status changed and values
  that moved — and whether the second is worse (:func:`compare_exit`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from xml.sax.saxutils import escape

from aicr_pytest.report.baseline import Change, compare
from aicr_pytest.report.history import RunRecord
from aicr_pytest.report.measures import DURATION, UNHEALTHY_GPUS, UNJUDGED_GPUS, Measurement, measurements

#: how bad a status is (higher: worse)
_RANK: Final = {"passed": 0, "skipped": 1, "pending": 1, "other": 2, "failed": 3}
_NOT_HEADLINE: Final = frozenset({DURATION, UNHEALTHY_GPUS, UNJUDGED_GPUS})


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.4g}"


def headline(record: RunRecord) -> list[Measurement]:
    """The values a check judged (they have a floor), not durations or health counts."""
    return [m for m in record.measurements if m.floor is not None and m.name not in _NOT_HEADLINE]


def run_lines(records: Sequence[RunRecord]) -> list[str]:
    """One line per run, oldest first."""
    lines = []
    for r in records:
        verdict = " ".join(f"{phase}={status}" for phase, status in r.verdicts.items()) or "no checks"
        figures = "; ".join(f"{m.label()} {_num(m.value)} {m.unit}".rstrip() for m in headline(r))
        line = f"{r.started or '-'}  {r.run_id}  {r.identity.recipe or '-'}  {verdict}"
        lines.append(f"{line}  {figures}" if figures else line)
    return lines


@dataclass(frozen=True)
class Trend:
    """One value over the runs that measured it (oldest first)."""

    label: str
    unit: str
    better: str
    values: tuple[float, ...]
    run_ids: tuple[str, ...]

    @property
    def summary(self) -> dict[str, float]:
        return {
            "min": min(self.values),
            "median": statistics.median(self.values),
            "last": self.values[-1],
        }

    def line(self) -> str:
        s = self.summary
        unit = f" ({self.unit})" if self.unit else ""
        return (
            f"{self.label}{unit}: min {_num(s['min'])}, median {_num(s['median'])}, last {_num(s['last'])}"
            f" over {len(self.values)} run(s) ({self.better} is better)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "unit": self.unit,
            "better": self.better,
            "values": list(self.values),
            "runIds": list(self.run_ids),
            **self.summary,
        }


def trends(records: Sequence[RunRecord], check: str | None = None) -> list[Trend]:
    """Per check, value and node: the trend, in first-seen order (``check``: that check only)."""
    found: dict[tuple[str, str, str], tuple[Measurement, list[float], list[str]]] = {}
    for r in records:
        for m in r.measurements:
            if check and m.check != check:
                continue
            entry = found.setdefault(m.key, (m, [], []))
            entry[1].append(m.value)
            entry[2].append(r.run_id)
    return [Trend(m.label(), m.unit, m.better, tuple(v), tuple(ids)) for m, v, ids in found.values()]


def runs_json(records: Sequence[RunRecord], check: str | None = None) -> dict[str, Any]:
    """``history --json``: the runs and the trends."""
    return {
        "runs": [
            {
                "runId": r.run_id,
                "started": r.started,
                "recipe": r.identity.recipe,
                "recipeFingerprint": r.identity.recipe_fp,
                "cluster": r.identity.cluster_fp,
                "server": r.identity.server,
                "context": r.identity.context,
                "passed": r.passed,
                "verdicts": r.verdicts,
                "measurements": [
                    {
                        "check": m.check,
                        "phase": m.phase,
                        "name": m.name,
                        "node": m.node,
                        "value": m.value,
                        "unit": m.unit,
                        "floor": m.floor,
                        "better": m.better,
                    }
                    for m in r.measurements
                    if not check or m.check == check
                ],
            }
            for r in records
        ],
        "trends": [t.to_json() for t in trends(records, check)],
    }


# --- the SVG trend ------------------------------------------------------------------------------

WIDTH: Final = 720
HEIGHT: Final = 360
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 20, 40, 50


def trend_svg(trend: Trend, floor: float | None = None) -> str:
    """SVG text: the value run by run (x: run number, oldest first), with the floor dashed."""
    values = [v for v in trend.values if math.isfinite(v)]
    unit = f" ({trend.unit})" if trend.unit else ""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2:.0f}" y="22" text-anchor="middle" font-size="15">'
        f"{escape(trend.label + unit)}</text>",
    ]
    if not values:
        out.append(f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle">no values</text>')
        return "\n".join([*out, "</svg>"]) + "\n"
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    y_hi = max([*values, floor or 0.0, 1e-9]) * 1.1
    y_lo = min(0.0, *values)

    def px(i: int) -> float:
        return _LEFT + (i / max(len(values) - 1, 1)) * plot_w

    def py(v: float) -> float:
        return _TOP + plot_h - (v - y_lo) / (y_hi - y_lo) * plot_h

    out.append(
        f'<g stroke="black"><line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" '
        f'y2="{_TOP + plot_h}"/><line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}"/></g>'
    )
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        v = y_lo + frac * (y_hi - y_lo)
        out.append(f'<text x="{_LEFT - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{_num(v)}</text>')
    out.append(
        f'<text x="{_LEFT + plot_w / 2:.0f}" y="{HEIGHT - 14}" text-anchor="middle">'
        f"run (oldest → newest, {len(values)} runs)</text>"
    )
    if floor is not None:
        y = py(floor)
        out.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" stroke="#d62728" '
            f'stroke-dasharray="6 4"/><text x="{_LEFT + plot_w - 4}" y="{y - 5:.1f}" text-anchor="end" '
            f'fill="#d62728">floor {_num(floor)}</text>'
        )
    points = " ".join(f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(values))
    out.append(f'<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for i, (v, run_id) in enumerate(zip(values, trend.run_ids, strict=False)):
        out.append(
            f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="3" fill="#1f77b4">'
            f"<title>{escape(run_id)}: {_num(v)}</title></circle>"
        )
    return "\n".join([*out, "</svg>"]) + "\n"


# --- compare ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusChange:
    check: str
    before: str
    after: str

    @property
    def worse(self) -> bool:
        return _RANK.get(self.after, 2) > _RANK.get(self.before, 2)


def _statuses(doc: Mapping[str, Any]) -> dict[str, str]:
    tests = doc.get("results", {}).get("tests", [])
    return {
        f"{(t.get('suite') or ['?'])[0]}/{t.get('name')}": str(t.get("status"))
        for t in tests
        if isinstance(t, Mapping)
    }


def compare_docs(
    a: Mapping[str, Any], b: Mapping[str, Any], max_regression: float | None
) -> tuple[list[StatusChange], list[Change]]:
    """Status changes (a check in one report only counts as ``missing``) and moved values of B vs A."""
    before, after = _statuses(a), _statuses(b)
    status = [
        StatusChange(k, before.get(k, "missing"), after.get(k, "missing"))
        for k in (*before, *(k for k in after if k not in before))
        if before.get(k) != after.get(k)
    ]
    moved = [c for c in compare(measurements(b), measurements(a), max_regression) if c.worse_pct != 0]
    return status, moved


def compare_lines(status: Sequence[StatusChange], moved: Sequence[Change]) -> list[str]:
    """The ``compare`` table: status changes, then values that moved."""
    lines: list[str] = []
    if status:
        width = max(len(s.check) for s in status)
        lines.append(f"{'CHECK':<{width}}  BEFORE   AFTER")
        for s in status:
            mark = "  (worse)" if s.worse else ""
            lines.append(f"{s.check:<{width}}  {s.before:<7}  {s.after}{mark}")
    if moved:
        labels = [c.current.label() for c in moved]
        width = max(len(x) for x in labels)
        lines.append(f"{'VALUE':<{width}}  {'BEFORE':>12}  {'AFTER':>12}  CHANGE")
        for label, c in zip(labels, moved, strict=True):
            pct = "n/a" if c.change_pct is None else f"{c.change_pct:+.1f}%"
            mark = "  (regressed)" if c.regressed else ""
            unit = f" {c.current.unit}" if c.current.unit else ""
            lines.append(
                f"{label:<{width}}  {_num(c.baseline):>12}  {_num(c.current.value):>12}  {pct}{unit}{mark}"
            )
    return lines or ["no check changed status and no measured value moved"]


def compare_exit(status: Sequence[StatusChange], moved: Sequence[Change]) -> int:
    """1 when a status got worse or a value regressed beyond the limit, else 0."""
    return 1 if any(s.worse for s in status) or any(c.regressed for c in moved) else 0


__all__ = [
    "StatusChange",
    "Trend",
    "compare_docs",
    "compare_exit",
    "compare_lines",
    "headline",
    "run_lines",
    "runs_json",
    "trend_svg",
    "trends",
]
