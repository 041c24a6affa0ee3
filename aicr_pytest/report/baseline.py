"""Baselines and regression gates (pure): a run's measured values against a previous run's.

* :func:`load_baseline` reads a baseline CTRF file (a :class:`~aicr_pytest.core.errors.UsageError`
  in one line when it is unreadable or not CTRF); :func:`foreign` says why a baseline of another
  recipe or cluster does not apply.
* :func:`compare` pairs each measured value with the baseline's (same check, name and node) and
  says how much worse it is (:attr:`Change.worse_pct`, signed: positive is worse, whichever way is
  better for the value) and whether that is a regression beyond ``max_regression`` percent.
* :func:`regression_line` is the one line a gated check fails with; :func:`insights` the CTRF
  per-test ``insights`` object; :func:`baseline_ref` the CTRF ``baseline`` object.

A value whose baseline is 0 has no percent change: it is reported, never gated.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.report.history import report_identity, report_run_id
from aicr_pytest.report.measures import DURATION, UNHEALTHY_GPUS, UNJUDGED_GPUS, Measurement, measurements

MSG_UNREADABLE: Final = "--baseline {path}: cannot read it ({why})"
MSG_NOT_CTRF: Final = "--baseline {path}: not a CTRF report ({why})"
MSG_FOREIGN: Final = "--baseline {path}: {why}"
MSG_FOREIGN_RECIPE: Final = "it validated another recipe ({theirs}, this run: {ours})"
MSG_FOREIGN_CLUSTER: Final = "it ran on another cluster ({theirs}, this run: {ours})"
MSG_NO_IDENTITY: Final = "it does not say which recipe and cluster it validated (no extra.aicr.identity)"
MSG_BAD_PCT: Final = "--max-regression {value}: must be a percentage between 0 and 100"
MSG_REGRESSION: Final = (
    "{label} {value} {unit} is {pct:.1f}% worse than the baseline {base} {unit} "
    "(run {run_id}; {where} {limit:g}%)"
)
MSG_INSIGHT: Final = "{label} {value} {unit}: {pct:+.1f}% vs the baseline {base} {unit} (run {run_id})"
#: the CTRF per-test ``insights.extra`` key holding the compared values
INSIGHTS_KEY: Final = "aicr.baseline"


def not_ctrf_reason(doc: Any) -> str | None:
    """Why ``doc`` is not a CTRF report (``None``: it is one)."""
    if not isinstance(doc, Mapping):
        return "the top level is not an object"
    if doc.get("reportFormat") != "CTRF":
        return 'no "reportFormat": "CTRF"'
    results = doc.get("results")
    if not isinstance(results, Mapping) or not isinstance(results.get("tests"), list):
        return "no results.tests list"
    return None


def load_ctrf(path: str | Path, *, option: str = "--baseline") -> dict[str, Any]:
    """A CTRF document from a file; one-line :class:`UsageError` when unreadable or not CTRF."""
    fmt = MSG_UNREADABLE.replace("--baseline", option)
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(fmt.format(path=path, why=getattr(err, "strerror", None) or err)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(MSG_NOT_CTRF.replace("--baseline", option).format(path=path, why=err)) from None
    why = not_ctrf_reason(doc)
    if why is not None:
        raise UsageError(MSG_NOT_CTRF.replace("--baseline", option).format(path=path, why=why))
    assert isinstance(doc, dict)
    return doc


def foreign(baseline: Mapping[str, Any], ours: Mapping[str, str]) -> str | None:
    """Why the baseline (a CTRF document) is not comparable with this run (``None``: it is)."""
    theirs = report_identity(baseline)
    if not theirs.get("recipeFingerprint"):
        return MSG_NO_IDENTITY
    if theirs.get("recipeFingerprint") != ours.get("recipeFingerprint"):
        return MSG_FOREIGN_RECIPE.format(
            theirs=theirs.get("recipe") or theirs.get("recipeFingerprint"), ours=ours.get("recipe")
        )
    if theirs.get("cluster", "") != ours.get("cluster", ""):
        return MSG_FOREIGN_CLUSTER.format(
            theirs=theirs.get("cluster") or "none", ours=ours.get("cluster") or "none"
        )
    return None


def check_pct(value: float | None) -> float | None:
    """``--max-regression``: ``None`` (off) or a percentage in [0, 100]; else a :class:`UsageError`."""
    if value is None:
        return None
    if not math.isfinite(value) or value < 0 or value > 100:
        raise UsageError(MSG_BAD_PCT.format(value=f"{value:g}"))
    return value


MSG_BAD_CATALOG_PCT: Final = (
    'validators/catalog.yaml: validator "{name}": maxRegression {value} must be a percentage '
    "between 0 and 100"
)


def catalog_limits(doc: Mapping[str, Any] | None, known: Iterable[str]) -> dict[str, float]:
    """Per-check ``--max-regression`` from a merged ``validators/catalog.yaml``: an entry's
    ``maxRegression`` (percent) for a check in ``known``; a bad value is a :class:`UsageError`."""
    names = set(known)
    found: dict[str, float] = {}
    for entry in (doc or {}).get("validators") or ():
        if (
            not isinstance(entry, Mapping)
            or entry.get("name") not in names
            or entry.get("maxRegression") is None
        ):
            continue
        value = entry["maxRegression"]
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 100
        if not ok or not math.isfinite(float(value)):
            raise UsageError(MSG_BAD_CATALOG_PCT.format(name=entry["name"], value=json.dumps(value)))
        found[str(entry["name"])] = float(value)
    return found


def worse_pct(value: float, base: float, better: str) -> float | None:
    """How much worse ``value`` is than ``base`` in percent (negative: better); ``None`` when base is 0."""
    if base == 0:
        return None
    change = (value - base) / abs(base) * 100.0
    return -change if better == "higher" else change


def gateable(m: Measurement) -> bool:
    """A value a check measured against its gates (``aicr.measurements``): not a duration, a health
    count or a DCGM counter — those are reported against the baseline, never gated."""
    return m.name not in (DURATION, UNHEALTHY_GPUS, UNJUDGED_GPUS) and not m.name.startswith("DCGM_")


@dataclass(frozen=True)
class Change:
    """One measured value next to its baseline."""

    current: Measurement
    baseline: float
    #: percent worse than the baseline (negative: better; ``None``: the baseline is 0)
    worse_pct: float | None
    #: worse by more than ``--max-regression`` (always ``False`` when the gate is off)
    regressed: bool

    @property
    def change_pct(self) -> float | None:
        """The signed change of the value itself, in percent."""
        if self.baseline == 0:
            return None
        return (self.current.value - self.baseline) / abs(self.baseline) * 100.0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.current.name,
            "node": self.current.node,
            "unit": self.current.unit,
            "current": self.current.value,
            "baseline": self.baseline,
            "changePct": None if self.change_pct is None else round(self.change_pct, 3),
            "worsePct": None if self.worse_pct is None else round(self.worse_pct, 3),
            "regressed": self.regressed,
        }


def compare(
    current: Sequence[Measurement],
    baseline: Sequence[Measurement],
    max_regression: float | None,
    *,
    durations: bool = False,
) -> list[Change]:
    """Each current value that has a baseline value (same key), in the current order; durations
    are compared only when ``durations`` (never gated)."""
    base = {m.key: m.value for m in baseline}
    changes: list[Change] = []
    for m in current:
        if m.key not in base or (m.name == DURATION and not durations):
            continue
        worse = worse_pct(m.value, base[m.key], m.better)
        gated = max_regression is not None and gateable(m)
        regressed = gated and worse is not None and max_regression is not None and worse > max_regression
        changes.append(Change(m, base[m.key], worse, regressed))
    return changes


def _fmt(value: float) -> str:
    return f"{value:.2f}" if abs(value) < 1e6 else f"{value:.4g}"


CATALOG_LIMIT: Final = "the catalog's maxRegression"


def regression_line(change: Change, run_id: str, limit: float, where: str = "--max-regression") -> str:
    """The one line a check fails with when a value regressed beyond ``--max-regression``."""
    m = change.current
    return MSG_REGRESSION.format(
        label=m.label(),
        value=_fmt(m.value),
        unit=m.unit,
        pct=change.worse_pct or 0.0,
        base=_fmt(change.baseline),
        run_id=run_id,
        limit=limit,
        where=where,
    ).replace("  ", " ")


def insight_line(change: Change, run_id: str) -> str:
    """The terminal line of a value that moved against its baseline (no gate)."""
    m = change.current
    return MSG_INSIGHT.format(
        label=m.label(),
        value=_fmt(m.value),
        unit=m.unit,
        pct=change.change_pct or 0.0,
        base=_fmt(change.baseline),
        run_id=run_id,
    ).replace("  ", " ")


def baseline_ref(baseline: Mapping[str, Any], source: str) -> dict[str, Any]:
    """CTRF's ``baseline`` object for a run compared with ``baseline`` (read from ``source``)."""
    run_id = report_run_id(baseline)
    report_id = baseline.get("reportId")
    if not isinstance(report_id, str) or not _is_uuid(report_id):
        report_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"aicr-pytest:{run_id or source}"))
    ref: dict[str, Any] = {"reportId": report_id, "source": source, "extra": {"aicr.runId": run_id}}
    stamp = baseline.get("timestamp")
    if isinstance(stamp, str) and stamp:
        ref["timestamp"] = stamp
    return ref


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def insights(
    changes: Sequence[Change], current_ms: float | None, baseline_ms: float | None
) -> dict[str, Any]:
    """CTRF per-test ``insights``: the duration as a ``metricDelta``, the values under ``extra``."""
    out: dict[str, Any] = {}
    if current_ms is not None and baseline_ms is not None:
        out["averageTestDuration"] = {
            "current": current_ms,
            "baseline": baseline_ms,
            "change": current_ms - baseline_ms,
        }
    values = [c.to_json() for c in changes if c.current.name != DURATION]
    if values:
        out["extra"] = {INSIGHTS_KEY: values}
    return out


def annotate(
    report: dict[str, Any],
    baseline: Mapping[str, Any],
    source: str,
    max_regression: float | None = None,
    limits: Mapping[str, float] | None = None,
) -> None:
    """Add CTRF ``baseline`` and each compared test's ``insights`` to ``report`` (in place)."""
    report["baseline"] = baseline_ref(baseline, source)
    base_tests = {
        (t.get("name"), tuple(t.get("suite") or ())): t
        for t in baseline.get("results", {}).get("tests", [])
        if isinstance(t, Mapping)
    }
    base_values = measurements(baseline)
    for test in report.get("results", {}).get("tests", []):
        key = (test.get("name"), tuple(test.get("suite") or ()))
        old = base_tests.get(key)
        if old is None or (test.get("suite") or [""])[0] == "readiness":
            continue
        mine = measurements({"results": {"tests": [test]}})
        limit = (limits or {}).get(str(test.get("name")), max_regression)
        changes = compare(mine, [m for m in base_values if m.check == test.get("name")], limit)
        found = insights(
            changes,
            float(test["duration"]) if isinstance(test.get("duration"), int | float) else None,
            float(old["duration"]) if isinstance(old.get("duration"), int | float) else None,
        )
        if found:
            test["insights"] = found


__all__ = [
    "CATALOG_LIMIT",
    "INSIGHTS_KEY",
    "Change",
    "annotate",
    "baseline_ref",
    "catalog_limits",
    "check_pct",
    "compare",
    "foreign",
    "gateable",
    "insight_line",
    "insights",
    "load_ctrf",
    "not_ctrf_reason",
    "regression_line",
    "worse_pct",
]
