"""From collected per-check results to the CTRF document and the phase summary (no pytest here).

The plugin attaches each item's outcome to pytest's reports as ``user_properties`` under the
``PROP_*`` keys below (they travel from xdist workers to the controller with the report);
:class:`RunResults` reads them back, report by report, into one :class:`ResultAccumulator` per item.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core import records
from aicr_pytest.core.constraints import ConstraintResult, format_readiness_failure
from aicr_pytest.report import ctrf, outcome

# user_properties keys (item identity, set at collection; outcome, set per report)
PROP_NAME = "aicr.name"
PROP_PHASE = "aicr.phase"
PROP_ORDER = "aicr.order"
PROP_KIND = "aicr.kind"
PROP_STATUS = "aicr.status"
PROP_MESSAGE = "aicr.message"
PROP_STDOUT = "aicr.stdout"
PROP_EXTRA = "aicr.extra"
PROP_HINTS = "aicr.hints"
PROP_USAGE_ERROR = "aicr.usage_error"
PROP_CLEANUP_WARNING = "aicr.cleanup_warning"
#: the HTML report's figures: carried to the controller, never into CTRF
PROP_FIGURES = records.FIGURES_PROPERTY
#: CTRF ``extra`` key: on a test that did not finish (``true``) and on the report (the reason)
EXTRA_INTERRUPTED = "aicr.interrupted"


@dataclass
class ResultAccumulator:
    """Reports of one item (setup/call/teardown) until the item is finished."""

    name: str
    phase: str
    order: int
    kind: str
    status: str = "passed"
    message: str | None = None
    stdout: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    decided: bool = False


@dataclass
class RunResults:
    """Every item's result of one run, fed one pytest report (setup, call, teardown) at a time."""

    finished: list[ResultAccumulator] = field(default_factory=list)
    pending: dict[str, ResultAccumulator] = field(default_factory=dict)
    #: the message of a :class:`~aicr_pytest.UsageError` a check raised (the run exits 2)
    usage_error: str | None = None
    #: ``--no-cleanup`` kubectl hints, in first-seen order, without repeats
    cleanup_hints: list[str] = field(default_factory=list)
    #: the HTML report's figures by check name (``{"title", "svg"}`` each), not part of CTRF
    figures: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: node ids whose teardown report arrived (finished items)
    done: set[str] = field(default_factory=set)
    #: one line per output (CTRF, HTML, JUnit, evidence, history, ...) that could not be written
    #: fully (:class:`~aicr_pytest.core.writable.OutputError`); the run ends non-zero
    output_errors: list[str] = field(default_factory=list)

    def output_failed(self, line: str) -> None:
        """Record an output that could not be written (the plugin prints the line last)."""
        self.output_errors.append(line)

    #: run-level CTRF ``extra`` a feature adds before the report is built (e.g. ``aicr.nodeMarks``)
    report_extra: dict[str, Any] = field(default_factory=dict)

    def add(
        self, nodeid: str, when: str, duration_s: float, props: Mapping[str, Any]
    ) -> ResultAccumulator | None:
        """Fold one report in; returns the item's result once its teardown report arrived."""
        if PROP_NAME not in props:
            return None
        acc = self.pending.get(nodeid)
        if acc is None:
            acc = ResultAccumulator(
                props[PROP_NAME], props[PROP_PHASE], int(props[PROP_ORDER]), props[PROP_KIND]
            )
            self.pending[nodeid] = acc
        acc.duration_s += duration_s
        if PROP_STATUS in props and not acc.decided:
            acc.status = props[PROP_STATUS]
            acc.message = props.get(PROP_MESSAGE)
            acc.decided = acc.status != "passed" or when == "call"
        if props.get(PROP_STDOUT):
            acc.stdout = list(props[PROP_STDOUT])
        if PROP_EXTRA in props:
            acc.extra.update(props[PROP_EXTRA])
        if PROP_USAGE_ERROR in props:
            self.usage_error = str(props[PROP_USAGE_ERROR])
        for hint in props.get(PROP_HINTS, ()):
            if hint not in self.cleanup_hints:
                self.cleanup_hints.append(hint)
        if PROP_CLEANUP_WARNING in props:
            acc.extra["aicr.cleanupWarning"] = props[PROP_CLEANUP_WARNING]
        if PROP_FIGURES in props:
            self.figures[acc.name] = list(props[PROP_FIGURES])
        if when != "teardown":
            return None
        self.pending.pop(nodeid, None)
        self.done.add(nodeid)
        self.finished.append(acc)
        return acc

    def statuses(self) -> tuple[str, ...]:
        """Finished items' statuses in run order."""
        return tuple(a.status for a in sorted(self.finished, key=lambda a: a.order))


def readiness_tests(results: Sequence[ConstraintResult]) -> list[ctrf.TestResult]:
    """Readiness constraints as CTRF tests under suite ``["readiness"]``."""
    tests: list[ctrf.TestResult] = []
    for r in results:
        tests.append(
            ctrf.TestResult(
                name=r.name,
                status="passed" if r.passed else "failed",
                suite=["readiness"],
                message=None if r.passed else format_readiness_failure(r),
                extra={"aicr.severity": r.severity},
            )
        )
    return tests


def build_ctrf(
    results: Sequence[ResultAccumulator],
    *,
    readiness: Sequence[ConstraintResult] = (),
    start_ms: int,
    run_id: str,
    interrupted: str | None = None,
    report_extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """CTRF for a run: readiness results (when given) first, then checks in run order.

    An interrupted run records why under the report's ``extra["aicr.interrupted"]``; ``report_extra`` is
    merged into the report's ``extra`` (what features recorded about the run as a whole).
    """
    tests: list[ctrf.TestResult] = readiness_tests(readiness)
    for acc in sorted(results, key=lambda a: a.order):
        stdout = outcome.cap_stdout(acc.stdout) if acc.stdout else None
        extra = dict(acc.extra)
        tests.append(
            ctrf.TestResult(
                name=acc.name,
                status=acc.status,  # type: ignore[arg-type]
                duration=round(acc.duration_s * 1000),
                suite=[acc.phase],
                message=acc.message,
                stdout=stdout,
                extra=extra or None,
            )
        )
    extra_report: dict[str, Any] = {"aicr.runId": run_id}
    if interrupted:
        extra_report[EXTRA_INTERRUPTED] = interrupted
    extra_report.update(report_extra or {})
    return ctrf.build_report(tests, start_ms=start_ms, stop_ms=int(time.time() * 1000), extra=extra_report)


def phase_table(
    phases: Sequence[str], results: Sequence[ResultAccumulator]
) -> list[tuple[str, str, dict[str, int]]]:
    """(phase, aggregated status, counts) for each phase that has a result, in run order.

    A phase none of whose items ran (not in the recipe, or deselected with ``-m``/``-k``) has no
    row: it was not validated, and ``skipped`` would say it was looked at.  A phase with an item
    the run did not finish (interrupted, timed out) is ``interrupted``.
    """
    rows = []
    for phase in phases:
        accs = [a for a in results if a.phase == phase]
        if not accs:
            continue
        statuses = [a.status for a in accs]
        counts = {s: statuses.count(s) for s in ("passed", "failed", "skipped", "other")}
        status = outcome.phase_status(statuses)
        if any(a.extra.get(EXTRA_INTERRUPTED) for a in accs):
            status = outcome.INTERRUPTED
        rows.append((phase, status, counts))
    return rows
