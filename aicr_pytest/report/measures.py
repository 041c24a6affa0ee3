"""Every measured value of a run, read back from the CTRF document the plugin wrote (pure).

A run's history, its baselines, ``compare`` and the Prometheus metrics all start from
:func:`measurements`: one flat :class:`Measurement` per value a check measured.  It reads only what
the CTRF document carries, so a report written by an older run (or read from a file) yields the
same values as the live run did:

* ``extra["aicr.measurements"]`` (:data:`aicr_pytest.core.records.MEASUREMENTS_KEY`): a value
  against its constraint — NCCL bus bandwidth per variant (the check's name names the variant),
  inference throughput and TTFT p99, the CRE figures.  The floor is the bound actually compared
  (``effectiveThreshold``); which way is better follows the constraint's operator, else the name.
  The inference check's node is its ``aicr.facts`` ``node``.
* ``extra["aicr.healthTable"]``: per node, the GPUs with a failed or warned row (``unhealthy GPUs``)
  and those that could not be judged (``unjudged GPUs``) — the DCGM diagnostics and exporter counters folded
  per node; lower is better and anything above 0 is what failed the check.
* ``extra["aicr.gpuHealth"]["counters"]`` when present: per node and DCGM field, the increase over
  the window (lower is better).
* every check's ``duration`` (seconds, lower is better) unless it was skipped.

A value that is missing or not a finite number is left out (never a zero).  Readiness
constraints are not measurements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from aicr_pytest.core.records import FACTS_KEY, HEALTH_TABLE_KEY, MEASUREMENTS_KEY

Better = Literal["higher", "lower"]

#: the measurement name of a check's duration
DURATION: Final = "duration"
UNHEALTHY_GPUS: Final = "unhealthy GPUs"
UNJUDGED_GPUS: Final = "unjudged GPUs"
#: CTRF ``extra`` key of ``gpu-health``'s record; its optional ``counters`` are per-node increases
GPU_HEALTH_KEY: Final = "aicr.gpuHealth"
READINESS: Final = "readiness"
#: names (lower case, substring) of values where smaller is better when no constraint says so
_LOWER_NAMES: Final = ("ttft", "latency", "duration", "time", "error", "unhealthy", "unjudged")


@dataclass(frozen=True)
class Measurement:
    """One measured value of one check (and node, where it is per node)."""

    check: str
    phase: str
    name: str
    value: float
    unit: str
    node: str | None
    floor: float | None
    better: Better

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the value across runs: check, name and node (``""``: the whole cluster)."""
        return (self.check, self.name, self.node or "")

    def label(self) -> str:
        """``check: name`` (``@ node`` when per node), for tables and messages."""
        where = f" @ {self.node}" if self.node else ""
        return f"{self.check}: {self.name}{where}"


def better_of(constraint: str | None, name: str) -> Better:
    """``higher`` for a ``>=``/``>`` constraint, ``lower`` for ``<=``/``<``; else by the name."""
    text = (constraint or "").strip()
    if text.startswith(">"):
        return "higher"
    if text.startswith("<"):
        return "lower"
    lowered = name.lower()
    return "lower" if any(word in lowered for word in _LOWER_NAMES) else "higher"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _phase(test: Mapping[str, Any]) -> str:
    suite = test.get("suite")
    return str(suite[0]) if isinstance(suite, list) and suite else ""


def _recorded(check: str, phase: str, extra: Mapping[str, Any]) -> list[Measurement]:
    facts = extra.get(FACTS_KEY)
    node = facts.get("node") if isinstance(facts, Mapping) else None
    out: list[Measurement] = []
    raw = extra.get(MEASUREMENTS_KEY)
    for item in raw if isinstance(raw, list) else ():
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
            continue
        value = _number(item.get("value"))
        if value is None:
            continue
        constraint = item.get("constraint") if isinstance(item.get("constraint"), str) else None
        out.append(
            Measurement(
                check=check,
                phase=phase,
                name=item["name"],
                value=value,
                unit=str(item.get("unit") or ""),
                node=str(node) if isinstance(node, str) and node else None,
                floor=_number(item.get("effectiveThreshold")),
                better=better_of(constraint, item["name"]),
            )
        )
    return out


def _health(check: str, phase: str, extra: Mapping[str, Any]) -> list[Measurement]:
    rows = extra.get(HEALTH_TABLE_KEY)
    if not isinstance(rows, list):
        return []
    bad: dict[str, set[str]] = {}
    unsure: dict[str, set[str]] = {}
    for row in rows:
        if not isinstance(row, Mapping) or not isinstance(row.get("node"), str) or not row["node"]:
            continue
        node, gpu, result = row["node"], str(row.get("gpu") or "*"), row.get("result")
        bad.setdefault(node, set())
        unsure.setdefault(node, set())
        if result in ("fail", "warn"):
            bad[node].add(gpu)
        elif result not in ("pass", "skip"):
            unsure[node].add(gpu)
    out: list[Measurement] = []
    for node in sorted(bad):
        for name, found in ((UNHEALTHY_GPUS, bad[node]), (UNJUDGED_GPUS, unsure[node])):
            out.append(Measurement(check, phase, name, float(len(found)), "", node, 0.0, "lower"))
    return out


def _counters(check: str, phase: str, extra: Mapping[str, Any]) -> list[Measurement]:
    record = extra.get(GPU_HEALTH_KEY)
    counters = record.get("counters") if isinstance(record, Mapping) else None
    out: list[Measurement] = []
    for node, fields in sorted(counters.items()) if isinstance(counters, Mapping) else ():
        for field, raw in sorted(fields.items()) if isinstance(fields, Mapping) else ():
            value = _number(raw)
            if value is not None:
                out.append(Measurement(check, phase, str(field), value, "", str(node), None, "lower"))
    return out


def _tests(ctrf: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = ctrf.get("results")
    tests = results.get("tests") if isinstance(results, Mapping) else None
    return [t for t in tests if isinstance(t, Mapping)] if isinstance(tests, list) else []


def measurements(ctrf: Mapping[str, Any]) -> list[Measurement]:
    """Every measured value of the CTRF document ``ctrf``, test by test in the report's order."""
    out: list[Measurement] = []
    for test in _tests(ctrf):
        check, phase = test.get("name"), _phase(test)
        if not isinstance(check, str) or not check or phase == READINESS:
            continue
        extra = test.get("extra") if isinstance(test.get("extra"), Mapping) else {}
        assert isinstance(extra, Mapping)
        out += _recorded(check, phase, extra)
        out += _health(check, phase, extra)
        out += _counters(check, phase, extra)
        duration = _number(test.get("duration"))
        if test.get("status") != "skipped" and duration is not None:
            out.append(Measurement(check, phase, DURATION, duration / 1000.0, "s", None, None, "lower"))
    return out


__all__ = [
    "DURATION",
    "UNHEALTHY_GPUS",
    "UNJUDGED_GPUS",
    "Better",
    "Measurement",
    "better_of",
    "measurements",
]
