"""From collected per-check results to the CTRF document and the phase summary (no pytest here).

The plugin attaches each item's outcome to pytest's reports as ``user_properties`` under the
``PROP_*`` keys below (they travel from xdist workers to the controller with the report);
:class:`RunResults` reads them back, report by report, into one :class:`ResultAccumulator` per item.
A value that is not a string travels as JSON text (:func:`prop`), so pytest's ``--junitxml``, which
writes each property as ``str(value)``, carries JSON too.

An item pytest-rerunfailures ran again sends one set of reports per attempt, the earlier attempts'
failing report with outcome ``rerun``: they become the CTRF test's ``retryAttempts``, and the item is
still one test, finished by its last attempt.
"""

from __future__ import annotations

import json
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
PROP_FILE = "aicr.file"
#: CTRF ``extra`` key: on a test that did not finish (``true``) and on the report (the reason)
EXTRA_INTERRUPTED = "aicr.interrupted"
#: CTRF ``extra`` key of the report and of every test of a ``--simulate`` run (``true``)
EXTRA_SIMULATED = "aicr.simulated"
#: the user_properties whose values are JSON text (lists and objects)
JSON_PROPS = frozenset({"aicr.stdout", "aicr.extra", "aicr.hints", records.FIGURES_PROPERTY})
#: the most characters of a failure's trace kept in CTRF
TRACE_LIMIT = 20_000


def prop(key: str, value: Any) -> tuple[str, Any]:
    """A ``user_properties`` entry: lists and objects as JSON text, so JUnit's property is JSON."""
    if key in JSON_PROPS and not isinstance(value, str):
        return key, json.dumps(value, ensure_ascii=False, sort_keys=False)
    return key, value


def read_props(user_properties: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """``user_properties`` back as values (JSON text decoded), the last of a repeated key winning."""
    props: dict[str, Any] = {}
    for key, value in user_properties:
        if key in JSON_PROPS and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        props[key] = value
    return props


@dataclass(frozen=True)
class RunIdentity:
    """What a report says about whom it validated: the recipe (its name: the stable test ids hang on
    it), the cluster (kube context or API server), and whether the cluster was simulated."""

    recipe: str = "recipe"
    cluster: str = "unknown"
    simulated: bool = False
    #: ``--no-cluster``: the snapshot alone was judged
    offline: bool = False


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
    #: the module that defines the check (CTRF ``filePath``)
    file_path: str | None = None
    #: epoch milliseconds of the first report's start and the last report's stop
    start_ms: int | None = None
    stop_ms: int | None = None
    #: the failing report's traceback (CTRF ``trace``)
    trace: str | None = None
    #: attempts before this one (pytest-rerunfailures), as CTRF ``retryAttempts``
    attempts: list[ctrf.RetryAttempt] = field(default_factory=list)
    #: the current attempt was failed and will be run again (a ``rerun`` report arrived)
    rerun: bool = False
    attempt_duration_s: float = 0.0

    def close_attempt(self) -> None:
        """The attempt that just ended is to be run again: keep it as a retry attempt, start afresh."""
        self.attempts.append(
            ctrf.RetryAttempt(
                attempt=len(self.attempts) + 1,
                status=self.status,  # type: ignore[arg-type]
                duration=round(self.attempt_duration_s * 1000),
                message=self.message,
                trace=self.trace,
            )
        )
        self.status, self.message, self.trace, self.decided, self.rerun = "passed", None, None, False, False
        self.stdout = []
        self.attempt_duration_s = 0.0


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

    #: run-level CTRF ``extra`` a feature adds before the report is built (e.g. ``aicr.nodeMarks``)
    report_extra: dict[str, Any] = field(default_factory=dict)

    def output_failed(self, line: str) -> None:
        """Record an output that could not be written (the plugin prints the line last)."""
        self.output_errors.append(line)

    def add(
        self,
        nodeid: str,
        when: str,
        duration_s: float,
        props: Mapping[str, Any],
        *,
        outcome: str = "",
        start: float | None = None,
        stop: float | None = None,
        trace: str | None = None,
    ) -> ResultAccumulator | None:
        """Fold one report in; returns the item's result once its (last attempt's) teardown report
        arrived.  ``outcome`` is the report's (``rerun``: this attempt will be run again), ``start``
        and ``stop`` its epoch seconds, ``trace`` its failure's text."""
        if PROP_NAME not in props:
            return None
        acc = self.pending.get(nodeid)
        if acc is None:
            acc = ResultAccumulator(
                props[PROP_NAME], props[PROP_PHASE], int(props[PROP_ORDER]), props[PROP_KIND]
            )
            acc.file_path = props.get(PROP_FILE)
            self.pending[nodeid] = acc
        acc.duration_s += duration_s
        acc.attempt_duration_s += duration_s
        if start is not None and acc.start_ms is None:
            acc.start_ms = int(start * 1000)
        if stop is not None:
            acc.stop_ms = int(stop * 1000)
        if PROP_STATUS in props and not acc.decided:
            acc.status = props[PROP_STATUS]
            acc.message = props.get(PROP_MESSAGE)
            acc.decided = acc.status != "passed" or when == "call"
            if acc.status in ("failed", "other") and trace:
                acc.trace = trace[-TRACE_LIMIT:]
        if outcome == "rerun":
            acc.rerun = True
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
        if acc.rerun:
            acc.close_attempt()
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
    identity: RunIdentity | None = None,
    baseline: dict[str, Any] | None = None,
    insights: dict[str, Any] | None = None,
    test_insights: Mapping[str, dict[str, Any]] | None = None,
    report_extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """CTRF for a run: readiness results (when given) first, then checks in run order.

    An interrupted run records why under the report's ``extra["aicr.interrupted"]``.  ``identity``
    (recipe, cluster, simulated) gives each test its stable id and the report its ``environment``;
    a simulated run marks the report and every test ``extra["aicr.simulated"] = true``.
    ``baseline``, ``insights`` and ``test_insights`` (by check name) are placed as given: a run
    history computes them.  ``report_extra`` is merged into the report's ``extra`` (what features
    recorded about the run as a whole).
    """
    ident = identity or RunIdentity()
    tests: list[ctrf.TestResult] = readiness_tests(readiness)
    for acc in sorted(results, key=lambda a: a.order):
        stdout = outcome.cap_stdout(acc.stdout) if acc.stdout else None
        extra = dict(acc.extra)
        tests.append(
            ctrf.TestResult(
                id=ctrf.stable_test_id(ident.recipe, acc.phase, acc.name),
                name=acc.name,
                status=acc.status,  # type: ignore[arg-type]
                duration=round(acc.duration_s * 1000),
                start=acc.start_ms,
                stop=acc.stop_ms,
                suite=[acc.phase],
                message=acc.message,
                trace=acc.trace,
                file_path=acc.file_path,
                retry_attempts=list(acc.attempts),
                stdout=stdout,
                extra=extra or None,
                insights=(test_insights or {}).get(acc.name),
            )
        )
    for test in tests:
        if test.id is None:
            test.id = ctrf.stable_test_id(ident.recipe, test.suite[0], test.name)
        if ident.simulated:
            test.extra = {**(test.extra or {}), EXTRA_SIMULATED: True}
    extra_report: dict[str, Any] = {"aicr.runId": run_id}
    if interrupted:
        extra_report[EXTRA_INTERRUPTED] = interrupted
    if ident.simulated:
        extra_report[EXTRA_SIMULATED] = True
    extra_report.update(report_extra or {})
    return ctrf.build_report(
        tests,
        start_ms=start_ms,
        stop_ms=int(time.time() * 1000),
        extra=extra_report,
        run_id=run_id or None,
        environment=ctrf.environment(
            cluster=ident.cluster, recipe=ident.recipe, simulated=ident.simulated, offline=ident.offline
        ),
        baseline=baseline,
        insights=insights,
    )


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
