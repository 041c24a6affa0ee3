"""The HTML report (``--html PATH``): one self-contained page per run.

Two steps, both plain functions:

1. :func:`build_page` — the view model.  From a CTRF-like report dict (what
   :func:`aicr_pytest.report.results.build_ctrf` writes), a :class:`RunInfo` (recipe, snapshot facts,
   readiness, phases, interrupted...: :mod:`.runinfo`) and the run's figures, it decides everything
   that goes on the page: which checks come first (failed, then ``other``), the phase table (computed by
   :func:`aicr_pytest.report.results.phase_table`, the terminal's own function), ``RESULT:`` lines,
   measured values against their constraints (``extra["aicr.measurements"]``), facts
   (``extra["aicr.facts"]``), figures and links to evidence files.  Nothing here knows a check by
   name: a new check's records show up without changes.
2. :func:`render` — jinja2 with autoescape on (``templates/report.html.j2``).  The page loads
   nothing (no external CSS, JS, fonts or images) and forbids scripts with a Content-Security-Policy;
   figures are inlined only after :func:`aicr_pytest.report.svgsafe.sanitize`.

Fail closed: a status the report does not know reads ``other``; a measurement that cannot be read
is shown as unreadable, never as a pass.  Secret values handed in (``HF_TOKEN``) are replaced by
``<redacted>`` in every string before anything is built.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from pydantic import ValidationError

from aicr_pytest.core import records
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.writable import write_output
from aicr_pytest.report import outcome, svgsafe
from aicr_pytest.report.results import ResultAccumulator, phase_table
from aicr_pytest.report.runinfo import ReadinessEntry, RunInfo, SnapshotFacts, run_info

REDACTED = "<redacted>"
READINESS_SUITE = "readiness"
#: the largest ``extra`` a check shows as JSON (characters)
MAX_EXTRA_CHARS = 64 * 1024
#: extra keys the page shows in their own form (everything else is listed as JSON)
_RENDERED_KEYS = frozenset(
    {records.MEASUREMENTS_KEY, records.FACTS_KEY, records.HEALTH_TABLE_KEY, "aicr.cleanupWarnings"}
)
#: a health-table row's result -> the status view (css class, word) its cell shows
HEALTH_STATUS: Mapping[str, str] = {
    "pass": "passed",
    "fail": "failed",
    "warn": "warning",
    "skip": "skipped",
    "other": "other",
}

STATUS_WORDS: Mapping[str, str] = {
    "passed": "PASSED",
    "failed": "FAILED",
    "other": "OTHER",
    "skipped": "SKIPPED",
    "pending": "PENDING",
    "interrupted": "INTERRUPTED",
    "warning": "WARNING",
    "unjudged": "NOT JUDGED",
}
STATUS_HELP: Mapping[str, str] = {
    "passed": "passed",
    "failed": "failed: a threshold or assertion was not met",
    "other": "other: could not be decided (an error, a timeout, a vanished pod); counts as failing",
    "skipped": "skipped: nothing was verified",
    "pending": "pending",
    "interrupted": "interrupted: the run was stopped before it finished",
    "warning": "warning: a severity: warning constraint failed; it does not block the run",
    "unjudged": "measured, but no constraint judges it",
}


# --------------------------------------------------------------------------------------------
# the view model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusView:
    key: str  #: css class suffix and machine value: passed, failed, other, ...
    word: str
    help: str


def status_view(status: str) -> StatusView:
    key = status if status in STATUS_WORDS else "other"
    return StatusView(key, STATUS_WORDS[key], STATUS_HELP[key])


@dataclass(frozen=True)
class MeasurementView:
    name: str
    value: str
    constraint: str
    tolerance: str
    bound: str
    verdict: StatusView


@dataclass(frozen=True)
class FigureView:
    title: str
    svg: Markup | None
    omitted: str | None = None


@dataclass(frozen=True)
class HealthRowView:
    node: str
    gpu: str
    serial: str
    test: str
    result: StatusView
    detail: str


def health_row_views(raw: Any) -> list[HealthRowView]:
    """The per-node, per-GPU health table of a check (CTRF ``aicr.healthTable``), every row."""
    return [
        HealthRowView(
            r.node, r.gpu or "—", r.serial or "—", r.test, status_view(HEALTH_STATUS[r.result]), r.detail
        )
        for r in records.health_rows(raw)
    ]


@dataclass(frozen=True)
class EvidenceLink:
    name: str
    href: str


@dataclass(frozen=True)
class CheckView:
    anchor: str
    name: str
    phase: str
    status: StatusView
    duration: str
    message: str | None
    results: list[str]
    stdout: list[str]
    measurements: list[MeasurementView]
    facts: list[tuple[str, str]]
    health: list[HealthRowView]
    figures: list[FigureView]
    evidence: list[EvidenceLink]
    cleanup_warnings: list[str]
    extra_json: str | None
    #: one line for the checks table: the RESULT lines, else the measurements, else the message
    summary: str = ""


@dataclass(frozen=True)
class PhaseRow:
    phase: str
    status: StatusView
    passed: int
    failed: int
    skipped: int
    other: int


@dataclass(frozen=True)
class ReadinessRow:
    name: str
    expected: str
    actual: str
    status: StatusView
    message: str | None


@dataclass(frozen=True)
class Page:
    title: str
    overall: StatusView
    headline: str
    run_id: str
    started: str
    duration: str
    tool: str
    info: RunInfo
    phases: list[PhaseRow]
    readiness: list[ReadinessRow]
    checks: list[CheckView]
    evidence: list[EvidenceLink]
    counts: dict[str, int] = field(default_factory=dict)


class _Redactor:
    def __init__(self, secrets: Iterable[str | None]) -> None:
        # very short values would blank out ordinary text; a real token is never that short
        self.secrets = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, REDACTED)
        return value

    def tree(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.tree(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.tree(v) for v in value]
        return value


def format_duration_ms(ms: float) -> str:
    """``850`` → ``0.85 s``, ``61_500`` → ``1 min 01 s``."""
    seconds = max(0.0, float(ms)) / 1000
    if seconds < 60:
        return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _number(value: float | None, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return "not a number"
    return f"{value:.2f} {unit}".strip()


def measurement_view(raw: Any) -> MeasurementView:
    """One ``aicr.measurements`` entry for the page; an unreadable entry is never a pass."""
    try:
        m = records.Measurement.model_validate(raw)
    except ValidationError:
        text = json.dumps(raw, ensure_ascii=False, default=str)
        return MeasurementView("unreadable measurement", text[:200], "—", "—", "—", status_view("other"))
    constraint = m.constraint or "—"
    tolerance = "—" if m.tolerance is None else f"{m.tolerance * 100:g} %"
    bound = "—"
    if m.effective_threshold is not None:
        op = (m.constraint or "").lstrip()[:2]
        sign = {">=": "≥", "<=": "≤"}.get(op, "")
        bound = f"passes at {sign} {_number(m.effective_threshold, m.unit)}".replace("  ", " ")
    verdict = status_view("unjudged" if m.passed is None else ("passed" if m.passed else "failed"))
    return MeasurementView(m.name, _number(m.value, m.unit), constraint, tolerance, bound, verdict)


def figure_view(raw: Any) -> FigureView:
    try:
        fig = records.Figure.model_validate(raw)
    except ValidationError as err:
        title = str(raw.get("title") or "figure") if isinstance(raw, Mapping) else "figure"
        reason = "; ".join(str(e["msg"]) for e in err.errors())
        return FigureView(title, None, f"figure omitted: {reason}")
    try:
        return FigureView(fig.title, svgsafe.sanitize(fig.svg))
    except svgsafe.UnsafeSvg as err:
        return FigureView(fig.title, None, f"figure omitted: {err}")


def evidence_files(evidence_dir: Path | None, *, since_ms: int) -> list[Path]:
    """Files under ``evidence_dir`` written by this run (modified at or after its start)."""
    if evidence_dir is None or not evidence_dir.is_dir():
        return []
    since = since_ms / 1000 - 2  # coarse file-system timestamps
    found = []
    for path in sorted(evidence_dir.rglob("*")):
        try:
            if path.is_file() and path.stat().st_mtime >= since:
                found.append(path)
        except OSError:
            continue
    return found


def _href(target: Path, page_dir: Path | None) -> str:
    try:
        rel = os.path.relpath(target.resolve(), page_dir.resolve()) if page_dir else str(target)
    except ValueError:
        return target.resolve().as_uri()
    return urllib.parse.quote(Path(rel).as_posix())


def evidence_owners(files: Sequence[Path], evidence_dir: Path, names: Sequence[str]) -> dict[str, list[Path]]:
    """Files named after a check (``<check>-busbw.svg``, ``<check>.log``, ``<check>/...``), by check.

    A file goes to the longest matching name, so ``nccl-all-reduce-bw-net-busbw.svg`` belongs to
    ``nccl-all-reduce-bw-net``, not to ``nccl-all-reduce-bw``.
    """
    owners: dict[str, list[Path]] = {}
    by_length = sorted(set(names), key=len, reverse=True)
    for path in files:
        first = path.relative_to(evidence_dir).parts[0]
        for name in by_length:
            if first == name or first.startswith((f"{name}-", f"{name}.")):
                owners.setdefault(name, []).append(path)
                break
    return owners


def _extra_json(extra: Mapping[str, Any]) -> str | None:
    rest = {k: v for k, v in extra.items() if k not in _RENDERED_KEYS}
    if not rest:
        return None
    text = json.dumps(rest, indent=2, ensure_ascii=False, default=str)
    if len(text) > MAX_EXTRA_CHARS:
        text = text[:MAX_EXTRA_CHARS] + f"\n… [truncated {len(text) - MAX_EXTRA_CHARS} chars]"
    return text


def _strings(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [] if value is None else [str(value)]


def check_view(
    index: int,
    test: Mapping[str, Any],
    figures: Sequence[Any],
    evidence: Sequence[EvidenceLink] = (),
) -> CheckView:
    name = str(test.get("name") or "(unnamed)")
    suite = _strings(test.get("suite"))
    extra = test.get("extra") if isinstance(test.get("extra"), Mapping) else {}
    assert isinstance(extra, Mapping)
    stdout = _strings(test.get("stdout"))
    raw_measurements = extra.get(records.MEASUREMENTS_KEY)
    measurements = [
        measurement_view(m)
        for m in (raw_measurements if isinstance(raw_measurements, list) else [raw_measurements])
        if m is not None
    ]
    facts_raw = extra.get(records.FACTS_KEY)
    facts = [(str(k), str(v)) for k, v in facts_raw.items()] if isinstance(facts_raw, Mapping) else []
    if facts_raw is not None and not isinstance(facts_raw, Mapping):
        facts = [("facts (unreadable)", json.dumps(facts_raw, default=str)[:200])]
    warnings = _strings(extra.get("aicr.cleanupWarnings"))
    duration = test.get("duration")
    message = str(test["message"]) if test.get("message") else None
    results = outcome.result_summaries(stdout)
    if results:
        summary = "; ".join(results)
    elif measurements:
        summary = "; ".join(f"{m.name} {m.value} ({m.verdict.word.lower()})" for m in measurements)
    else:
        summary = message.splitlines()[0] if message else ""
    return CheckView(
        anchor=f"check-{index}",
        name=name,
        phase=suite[0] if suite else "",
        status=status_view(str(test.get("status") or "other")),
        duration=format_duration_ms(duration) if isinstance(duration, int | float) else "—",
        message=message,
        results=results,
        stdout=stdout,
        measurements=measurements,
        facts=facts,
        health=health_row_views(extra.get(records.HEALTH_TABLE_KEY)),
        figures=[figure_view(f) for f in figures],
        evidence=list(evidence),
        cleanup_warnings=warnings,
        extra_json=_extra_json(extra),
        summary=summary,
    )


def phase_rows(phases: Sequence[str], checks: Sequence[CheckView]) -> list[PhaseRow]:
    """The terminal's phase table (:func:`results.phase_table`) for the page's checks."""
    accs = [ResultAccumulator(c.name, c.phase, i, "check", status=c.status.key) for i, c in enumerate(checks)]
    order = list(phases) + [c.phase for c in checks if c.phase not in phases]
    rows = phase_table(list(dict.fromkeys(order)), accs)
    return [
        PhaseRow(phase, status_view(status), c["passed"], c["failed"], c["skipped"], c["other"])
        for phase, status, c in rows
    ]


def _readiness_rows(info: RunInfo, tests: Sequence[Mapping[str, Any]]) -> list[ReadinessRow]:
    if info.readiness:
        return [
            ReadinessRow(
                r.name,
                r.expected,
                r.actual,
                status_view("passed" if r.passed else ("warning" if r.severity == "warning" else "failed")),
                r.message,
            )
            for r in info.readiness
        ]
    return [  # only the CTRF readiness suite (a blocked run) is known
        ReadinessRow(
            str(t.get("name") or ""),
            "",
            "",
            status_view(str(t.get("status") or "other")),
            str(t["message"]) if t.get("message") else None,
        )
        for t in tests
    ]


def _redact_strings(obj: Any, redact: _Redactor) -> Any:
    """A copy of the dataclass ``obj`` with its string (and tuple-of-string) fields redacted."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, str):
            changes[f.name] = redact.text(value)
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            changes[f.name] = tuple(redact.text(v) for v in value)
    return dataclasses.replace(obj, **changes)


def _redact_info(info: RunInfo, redact: _Redactor) -> RunInfo:
    snapshot = _redact_strings(info.snapshot, redact) if info.snapshot is not None else None
    readiness = tuple(_redact_strings(r, redact) for r in info.readiness)
    redacted: RunInfo = _redact_strings(info, redact)
    return dataclasses.replace(redacted, snapshot=snapshot, readiness=readiness)


def _started(report: Mapping[str, Any], start_ms: Any) -> str:
    if isinstance(start_ms, int | float) and start_ms > 0:
        return datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(report.get("timestamp") or "unknown")


def build_page(
    report: Mapping[str, Any],
    info: RunInfo,
    *,
    figures: Mapping[str, Sequence[Any]] | None = None,
    secrets: Iterable[str | None] = (),
    page_path: Path | None = None,
) -> Page:
    """Everything the page shows, decided here (no markup)."""
    redact = _Redactor(secrets)
    report = redact.tree(report)
    figures = redact.tree(dict(figures or {}))
    info = _redact_info(info, redact)
    results = report.get("results") if isinstance(report.get("results"), Mapping) else {}
    assert isinstance(results, Mapping)
    raw_tests = results.get("tests") if isinstance(results.get("tests"), list) else []
    assert isinstance(raw_tests, list)
    tests = [t for t in raw_tests if isinstance(t, Mapping)]
    summary = results.get("summary") if isinstance(results.get("summary"), Mapping) else {}
    assert isinstance(summary, Mapping)
    readiness_tests = [t for t in tests if _strings(t.get("suite"))[:1] == [READINESS_SUITE]]
    check_tests = [t for t in tests if _strings(t.get("suite"))[:1] != [READINESS_SUITE]]

    start_ms = summary.get("start")
    page_dir = page_path.parent if page_path is not None else None
    evidence = evidence_files(info.evidence_dir, since_ms=int(start_ms) if isinstance(start_ms, int) else 0)
    names = [str(t.get("name") or "") for t in check_tests]
    owners = evidence_owners(evidence, info.evidence_dir, names) if info.evidence_dir is not None else {}

    def links(paths: Sequence[Path]) -> list[EvidenceLink]:
        base = info.evidence_dir
        return [EvidenceLink(str(p.relative_to(base)), _href(p, page_dir)) for p in paths] if base else []

    in_order = [
        check_view(i, t, figures.get(names[i], []), links(owners.get(names[i], [])))
        for i, t in enumerate(check_tests)
    ]
    rank = {"failed": 0, "other": 1}
    checks = sorted(in_order, key=lambda c: rank.get(c.status.key, 2))
    phases = phase_rows(info.phases, in_order)
    counts = {k: sum(getattr(r, k) for r in phases) for k in ("passed", "failed", "skipped", "other")}

    if info.interrupted:
        overall = status_view("interrupted")
    elif info.readiness_blocked:
        overall = status_view("failed")
    else:
        overall = status_view(outcome.phase_status([r.status.key for r in phases]))
    parts = [f"{counts[k]} {k}" for k in ("failed", "other", "passed", "skipped") if counts[k]]
    headline = ", ".join(parts) if parts else "no checks ran"
    if info.readiness_blocked:
        headline = "readiness pre-flight failed: every check was skipped"

    stop_ms = summary.get("stop")
    duration = "unknown"
    if isinstance(start_ms, int | float) and isinstance(stop_ms, int | float):
        duration = format_duration_ms(stop_ms - start_ms)
    extra = report.get("extra") if isinstance(report.get("extra"), Mapping) else {}
    assert isinstance(extra, Mapping)
    tool = results.get("tool") if isinstance(results.get("tool"), Mapping) else {}
    assert isinstance(tool, Mapping)
    return Page(
        title=f"aicr-pytest: {overall.word} — {info.recipe_name}",
        overall=overall,
        headline=headline,
        run_id=str(extra.get("aicr.runId") or "unknown"),
        started=_started(report, start_ms),
        duration=duration,
        tool=f"{tool.get('name') or 'aicr-pytest'} {tool.get('version') or ''}".strip(),
        info=info,
        phases=phases,
        readiness=_readiness_rows(info, readiness_tests),
        checks=checks,
        evidence=links(evidence),
        counts=counts,
    )


# --------------------------------------------------------------------------------------------
# rendering and writing
# --------------------------------------------------------------------------------------------

_ENV: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    """jinja2 with autoescape ON for every template (``.j2`` files included)."""
    global _ENV
    if _ENV is None:
        _ENV = jinja2.Environment(
            loader=jinja2.PackageLoader("aicr_pytest.report", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
    return _ENV


def render(page: Page) -> str:
    return environment().get_template("report.html.j2").render(page=page)


def check_target(path: str | Path) -> Path:
    """The ``--html`` destination, checked before the run starts (a usage error otherwise)."""
    target = Path(path)
    if str(path) in ("", "-"):
        raise UsageError("--html needs a file path")
    if target.is_dir():
        raise UsageError(f"--html {path}: is a directory")
    return target


def write_page(
    path: str | Path,
    report: Mapping[str, Any],
    info: RunInfo,
    *,
    figures: Mapping[str, Sequence[Any]] | None = None,
    secrets: Iterable[str | None] = (),
) -> Path:
    """Build, render and write the page atomically (a half-written page never replaces a whole one);
    :class:`~aicr_pytest.core.writable.OutputError` when it cannot be written."""
    target = Path(path)
    text = render(build_page(report, info, figures=figures, secrets=secrets, page_path=target))
    write_output(target, text, "--html")
    return target


__all__ = [
    "CheckView",
    "EvidenceLink",
    "FigureView",
    "MeasurementView",
    "Page",
    "PhaseRow",
    "ReadinessEntry",
    "ReadinessRow",
    "RunInfo",
    "SnapshotFacts",
    "StatusView",
    "build_page",
    "check_target",
    "check_view",
    "environment",
    "evidence_files",
    "evidence_owners",
    "figure_view",
    "format_duration_ms",
    "measurement_view",
    "phase_rows",
    "render",
    "run_info",
    "write_page",
]
