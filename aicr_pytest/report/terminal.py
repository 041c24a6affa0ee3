"""What a run prints on the terminal, as lines (pure functions; the plugin writes them).

* :func:`header_line` — the ``aicr-pytest: recipe … | snapshot … | mode | run ID`` header;
* :func:`preflight_lines` — input warnings and readiness results, before the first check;
* :func:`summary_sections` — the ``aicr results`` (``RESULT:`` lines), ``aicr measurements``
  (each measured figure against its constraint), ``aicr failures`` (one line per failure and where
  the details are; under a node-health check's line, its health-table rows that did not pass:
  :func:`health_table_lines`) and ``aicr phase summary`` sections at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from aicr_pytest.core import records
from aicr_pytest.core.constraints import ConstraintResult, format_readiness_line
from aicr_pytest.core.redact import redact_text
from aicr_pytest.core.textsafe import printable
from aicr_pytest.report import outcome
from aicr_pytest.report.results import ResultAccumulator, phase_table

READINESS_BLOCKED_START = "readiness pre-flight failed: no check runs and nothing touches the cluster"
READINESS_BLOCKED_END = "readiness pre-flight failed: every check was skipped"


class Section(NamedTuple):
    """A titled block of the terminal summary."""

    title: str
    lines: list[str]


def header_line(
    recipe_header: str,
    *,
    snapshot: str | None,
    no_cluster: bool,
    simulated: str | None,
    run_id: str,
    in_cluster: bool = False,
) -> str:
    """The report header: what is validated, against what, how (``in_cluster``: as the pod's
    service account, no kubeconfig), and the run id."""
    mode = "--no-cluster (offline: snapshot only)" if no_cluster else "live cluster"
    if in_cluster and not no_cluster:
        mode = "live cluster (in-cluster service account)"
    if simulated and not no_cluster:
        mode = "SIMULATED cluster (aicr-pytest simulate; no real GPUs)"
    line = f"aicr-pytest: {recipe_header} | snapshot {snapshot or 'none'} | {mode} | run {run_id}"
    return redact_text(line)  # a presigned recipe or snapshot URL keeps its signature to itself


def preflight_lines(
    warnings: Sequence[str], readiness: Sequence[ConstraintResult], *, blocked: bool
) -> list[str]:
    """Input warnings, each readiness constraint (passed or failed), the block notice when it blocks."""
    lines = [f"warning: {warning}" for warning in warnings]
    for result in readiness:
        prefix = "warning: " if result.severity == "warning" and not result.passed else ""
        lines.append(prefix + format_readiness_line(result))  # passed and failed, as AICR logs
    if blocked:
        lines.append(READINESS_BLOCKED_START)
    return lines


def phase_summary_lines(phases: Sequence[str], results: Sequence[ResultAccumulator]) -> list[str]:
    """The phase table: one header row, one row per phase in run order."""
    rows = phase_table(phases, results)
    w = max([8, *(len(status) for _, status, _ in rows)])  # "interrupted" widens the column
    lines = [f"{'phase':<13} {'status':<{w}} {'passed':>6} {'failed':>6} {'skipped':>7} {'other':>5}"]
    for phase, status, c in rows:
        lines.append(
            f"{phase:<13} {status:<{w}} {c['passed']:>6} {c['failed']:>6} {c['skipped']:>7} {c['other']:>5}"
        )
    return lines


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


def measurement_lines(results: Sequence[ResultAccumulator]) -> list[str]:
    """Each check's measured figures against their constraints, passed or failed, e.g.
    ``nccl-all-reduce-bw: bus bandwidth 452.64 GB/s against >= 300 (bound 270 after tolerance): passed``.
    """
    lines: list[str] = []
    for acc in sorted(results, key=lambda a: a.order):
        for m in acc.extra.get(records.MEASUREMENTS_KEY) or ():
            if not isinstance(m, dict) or not m.get("name"):
                continue
            unit = f" {m['unit']}" if m.get("unit") else ""
            text = f"{acc.name}: {m['name']} {_number(m.get('value'))}{unit}"
            if m.get("constraint"):
                text += f" against {m['constraint']}"
                if m.get("effectiveThreshold") is not None:
                    text += f" (bound {_number(m['effectiveThreshold'])} after tolerance)"
            judged = m.get("passed")
            verdict = "not judged" if judged is None else ("passed" if judged is True else "failed")
            lines.append(f"{text}: {verdict}")
    return lines


#: the most health-table rows shown under one failure line (the rest: CTRF ``aicr.healthTable``)
MAX_HEALTH_ROWS = 40
HEALTH_COLUMNS = ("node", "GPU", "serial", "test", "result", "detail")


def health_table_lines(extra: Mapping[str, Any], indent: str = "  ") -> list[str]:
    """The rows of a check's per-node, per-GPU health table that did not pass, as aligned columns
    (header first), at most :data:`MAX_HEALTH_ROWS` of them; nothing when every row passed."""
    bad = [r for r in records.health_rows(extra.get(records.HEALTH_TABLE_KEY)) if not r.ok]
    if not bad:
        return []
    shown = [
        (r.node, r.gpu or "-", r.serial or "-", r.test, r.result, r.detail) for r in bad[:MAX_HEALTH_ROWS]
    ]
    cells = [tuple(printable(c) for c in row) for row in shown]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(HEALTH_COLUMNS[:-1])]
    fmt = indent + "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    lines = [fmt.format(*HEALTH_COLUMNS).rstrip(), *(fmt.format(*row).rstrip() for row in cells)]
    if len(bad) > MAX_HEALTH_ROWS:
        more = len(bad) - MAX_HEALTH_ROWS
        lines.append(f"{indent}… {more} more row(s) in CTRF extra {records.HEALTH_TABLE_KEY}")
    return lines


def one_line(message: str) -> str:
    """A message of several lines as one: the first line, then the others (stripped) after it, split
    by ``; ``, e.g. ``… 2 issue(s): DaemonSet a 3/4 ready; Deployment b 0/1 available``."""
    parts = [printable(p.strip()) for p in message.strip().splitlines() if p.strip()]
    if not parts:
        return "no message"
    return " ".join((parts[0], "; ".join(parts[1:]))) if len(parts) > 1 else parts[0]


def fit(line: str, width: int | None) -> str:
    """``line`` cut to ``width`` characters, an ellipsis marking the cut (``None``: uncut)."""
    if width is None or width < 2 or len(line) <= width:
        return line
    return line[: width - 1] + "…"


def failure_lines(
    results: Sequence[ResultAccumulator], where: Sequence[str] = (), width: int | None = None
) -> list[str]:
    """One line per check that failed or ended ``other`` (its reason, the lines after the first
    joined on (a message may quote a pod's log), cut at ``width``; a node-health check's health-table
    rows that did not pass follow it), then where to look."""
    lines: list[str] = []
    for acc in sorted(results, key=lambda a: a.order):
        if not outcome.is_failing(acc.status):
            continue
        reason = one_line(acc.message or "")
        lines.append(fit(f"{acc.status.upper()} {acc.name} ({acc.phase}): {reason}", width))
        lines.extend(health_table_lines(acc.extra))
    if lines and where:
        lines.append("details: " + "; ".join(where))
    return lines


def summary_sections(
    phases: Sequence[str],
    results: Sequence[ResultAccumulator],
    *,
    readiness_blocked: bool,
    cleanup_hints: Sequence[str] = (),
    where: Sequence[str] = (),
    width: int | None = None,
) -> list[Section]:
    """``aicr results`` (only when a check printed ``RESULT:`` lines), ``aicr measurements`` and
    ``aicr failures`` (only when there are any; ``where`` says where the details are), and
    ``aicr phase summary``."""
    sections: list[Section] = []
    summaries: list[str] = []
    for acc in sorted(results, key=lambda a: a.order):
        summaries.extend(outcome.result_summaries(acc.stdout))
    if summaries:
        sections.append(Section("aicr results", summaries))
    measured = measurement_lines(results)
    if measured:
        sections.append(Section("aicr measurements", measured))
    failures = failure_lines(results, where, width)
    if failures:
        sections.append(Section("aicr failures", failures))
    table = phase_summary_lines(phases, results)
    if readiness_blocked:
        table.append(READINESS_BLOCKED_END)
    table.extend(cleanup_hints)
    sections.append(Section("aicr phase summary", table))
    return sections
