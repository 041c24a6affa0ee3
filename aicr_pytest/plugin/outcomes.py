"""The one exception → status mapping, and the reports that carry it to the controller.

Check code raises the package's own exceptions (:mod:`aicr_pytest.core.errors`; the ``aicr_check``
context's ``fail``/``skip`` raise them too) and never needs pytest; this module is the one place that
turns them into pytest outcomes and CTRF statuses:

* the test passed → ``passed``;
* ``AssertionError`` (:class:`~aicr_pytest.CheckFailed`, which ``aicr_check.fail`` raises and every
  family's failure subclasses) or ``pytest.fail`` → ``failed``, the author's message kept (pytest's
  ``assert <expr>`` rewrite is cut off);
* :class:`~aicr_pytest.core.errors.CheckSkip` (``aicr_check.skip``, domain code; raised while the
  check or its fixtures run: :func:`domain_skips`) or ``pytest.skip`` → ``skipped``, the reason as
  message; such a check-level skip also ends the check's ``stdout`` with
  ``level=INFO msg=SKIP reason="…"``, while a phase-level skip (:func:`phase_skip`: fail-fast,
  ``--no-cluster``, readiness, ``--skip-check``) keeps its reason in the message only;
* a check of a run whose cluster was found unreachable (:func:`cluster_gate`) → ``other`` with
  the reachability probe's one line, whether it had not run yet or failed while it ran;
* :class:`~aicr_pytest.Inconclusive` → ``other`` with its message; a check past its time budget
  (:class:`~aicr_pytest.plugin.budget.CheckTimeout`) → ``other`` with its one timeout line;
  :class:`~aicr_pytest.UsageError` → ``other``, and the run exits 2;
  anything else (API unreachable, a pod vanished, a crash) → ``other`` as ``Type: message``;
* an error in teardown (cleanup) keeps the item's status and is recorded as a cleanup warning.

:func:`annotate` writes the verdict into the report's ``user_properties`` (they travel from xdist
workers to the controller); :class:`ResultCollector` reads them back into
:class:`~aicr_pytest.report.results.RunResults` on the controller.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aicr_pytest.core import ctrfextra
from aicr_pytest.core.errors import CheckSkip, Inconclusive, UsageError
from aicr_pytest.core.runflags import SKIP_CHECK_REASON, SKIP_CHECK_REASON_CODE
from aicr_pytest.plugin.budget import CheckTimeout
from aicr_pytest.plugin.state import CTX_KEY, HINTS_KEY, ITEM_KEY, PluginState, get_state
from aicr_pytest.report import results as r
from aicr_pytest.report.outcome import skip_log_line

#: stashed on an item the run skipped before it ran (:func:`phase_skip`)
PHASE_SKIP_KEY = pytest.StashKey[str]()


def phase_skip(item: pytest.Item, reason: str) -> None:
    """Skip ``item`` before it runs (the run's gates): the reason goes to ``message`` only."""
    item.stash[PHASE_SKIP_KEY] = reason
    pytest.skip(reason)


def check_level_skip(item: pytest.Item, report: pytest.TestReport) -> bool:
    """A skip the check itself gave: raised while it ran, or while its fixtures were set up (the
    ``aicr_check`` context exists), not by the run's gates or a skip marker."""
    if item.stash.get(PHASE_SKIP_KEY, None) is not None:
        return False
    return report.when == "call" or item.stash.get(CTX_KEY, None) is not None


@contextlib.contextmanager
def domain_skips() -> Iterator[None]:
    """A check (``aicr_check.skip``) or its domain code signals a deliberate skip with
    :class:`CheckSkip`; pytest reports it skipped (wraps a check's setup and call)."""
    try:
        yield
    except CheckSkip as skip:
        # chained, so the report can read the skip's reason code (CTRF extra.skipReason)
        raise pytest.skip.Exception(skip.reason) from skip


#: the fixtures through which a check reaches the cluster (every bundled check uses one)
CLUSTER_FIXTURES = frozenset({"aicr_cluster", "aicr_run"})


def _unreachable(item: pytest.Item) -> str | None:
    state = get_state(item.config)
    info = item.stash.get(ITEM_KEY, None)
    if state is None or state.cluster_handle is None or info is None or info.kind != "check":
        return None
    if not CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return None  # a check of the user's that never touches the cluster runs as ever
    return state.cluster_handle.unreachable()


@contextlib.contextmanager
def cluster_gate(item: pytest.Item) -> Iterator[None]:
    """A check ends ``other`` with the reachability probe's one line (:mod:`aicr_pytest.kube.reach`)
    when the cluster was found unreachable: before it runs (it is not run), or while it ran (a
    failure it reported then is the outage's, not the cluster's verdict)."""
    line = _unreachable(item)
    if line is not None:
        raise Inconclusive(line)
    try:
        yield
    except (AssertionError, pytest.fail.Exception) as exc:
        line = _unreachable(item)
        if line is None:
            raise
        raise Inconclusive(line) from exc


@contextlib.contextmanager
def cut_on_trip(item: pytest.Item, cut: Callable[[str], None]) -> Iterator[None]:
    """While a check runs, a cluster found unreachable ends it at once (``other`` with the line)."""
    state = get_state(item.config)
    handle = state.cluster_handle if state is not None else None
    if handle is None or item.stash.get(ITEM_KEY, None) is None:
        yield
        return
    handle.on_trip = cut
    try:
        yield
    finally:
        handle.on_trip = None
        line = handle.unreachable()
        if line is not None and not handle.announced:
            handle.announced = True
            reporter = item.config.pluginmanager.get_plugin("terminalreporter")
            capture = item.config.pluginmanager.get_plugin("capturemanager")
            if reporter is not None:
                paused = capture.global_and_fixture_disabled() if capture is not None else None
                with paused or contextlib.nullcontext():  # the check's output is being captured
                    reporter.write_line(f"aicr-pytest: error: {line}")


def budget_of(item: pytest.Item) -> tuple[float | None, str]:
    """The check's time budget in seconds (``None``: not a check of an active run) and the line it
    ends ``other`` with past it."""
    from aicr_pytest.core.budgets import exceeded_message

    info = item.stash.get(ITEM_KEY, None)
    state = get_state(item.config)
    if info is None or info.kind != "check" or state is None:
        return None, ""
    ctx = item.stash.get(CTX_KEY, None)
    seconds = float(ctx.timeout_s) if ctx is not None else state.budgets.get(info.name)
    return seconds, exceeded_message(seconds) if seconds else ""


def exception_message(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    exc = excinfo.value
    text = str(exc).strip()
    if isinstance(exc, CheckTimeout):
        return text
    if isinstance(exc, AssertionError):
        # assertion rewriting appends "assert <expr>"; keep the author's message when there is one
        head = text.split("\nassert ", 1)[0].strip()
        return head or text or "assertion failed"
    if isinstance(exc, pytest.fail.Exception | pytest.skip.Exception):
        return text
    if isinstance(exc, Inconclusive):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason.removeprefix("Skipped: ")
    return str(longrepr)


def skip_code(report_message: str, excinfo: pytest.ExceptionInfo[BaseException] | None) -> str | None:
    """AICR's ``skipReason`` code of a skip: ``--skip-check``'s, or the one domain code gave its
    :class:`CheckSkip`; ``None`` for every other skip (AICR gives those no code)."""
    if report_message == SKIP_CHECK_REASON:
        return SKIP_CHECK_REASON_CODE
    cause = excinfo.value.__cause__ if excinfo is not None else None
    return cause.code if isinstance(cause, CheckSkip) else None


def status_of(report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None) -> str | None:
    """The CTRF status this report gives its item (``None``: it decides nothing)."""
    if report.skipped:
        return "skipped"
    if report.failed and excinfo is not None:
        return "failed" if isinstance(excinfo.value, AssertionError | pytest.fail.Exception) else "other"
    if report.when == "call":
        return "passed"
    return None


def annotate(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """Attach the item's outcome (and its evidence) to ``report.user_properties``."""
    if item.stash.get(ITEM_KEY, None) is None:
        return
    props = report.user_properties
    status = status_of(report, call.excinfo)
    message: str | None = None
    if status == "skipped":
        message = skip_reason(report)
    elif call.excinfo is not None and report.failed:
        message = exception_message(call.excinfo)
        if report.when == "teardown":
            props.append((r.PROP_CLEANUP_WARNING, message))
        if isinstance(call.excinfo.value, UsageError):
            props.append((r.PROP_USAGE_ERROR, message))
    ctx = item.stash.get(CTX_KEY, None)
    if report.when == "teardown":
        if ctx is not None and ctx.extra:
            props.append(r.prop(r.PROP_EXTRA, dict(ctx.extra)))
        hints = item.stash.get(HINTS_KEY, None)
        if hints:
            props.append(r.prop(r.PROP_HINTS, list(hints)))
        return
    if status is None:
        return
    props.append((r.PROP_STATUS, status))
    if message:
        props.append((r.PROP_MESSAGE, message.splitlines()[0] if status == "skipped" else message))
    if status == "skipped":
        skip_extra = ctrfextra.skip_extra(skip_code(message or "", call.excinfo))
        if skip_extra:
            props.append(r.prop(r.PROP_EXTRA, skip_extra))
    stdout = list(ctx.lines) if ctx is not None else []
    if status == "skipped" and check_level_skip(item, report):
        stdout.append(skip_log_line(message.splitlines()[0] if message else ""))
    if report.when in ("call", "setup") and (ctx is not None or stdout):
        props.append(r.prop(r.PROP_STDOUT, stdout))
    if report.when in ("call", "setup") and ctx is not None:
        if ctx.extra:
            props.append(r.prop(r.PROP_EXTRA, dict(ctx.extra)))
        if ctx.figures:  # the HTML report's figures reach the xdist controller, not CTRF
            props.append(r.prop(r.PROP_FIGURES, list(ctx.figures)))


def teststatus(report: pytest.TestReport) -> tuple[str, str, Any] | None:
    """``other`` gets its own letter and word in pytest's progress output."""
    if report.when not in ("setup", "call") or not report.failed:
        return None
    if (r.PROP_STATUS, "other") in report.user_properties:
        return "other", "O", ("OTHER", {"yellow": True})
    return None


class ResultCollector:
    """Registered on the controller (or the only process) of an active run: gathers reports."""

    def __init__(self, state: PluginState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = r.read_props(report.user_properties)
        rerun = str(report.outcome) == "rerun"
        trace = report.longreprtext if report.failed or rerun else None
        acc = self.state.results.add(
            report.nodeid,
            report.when,
            report.duration,
            props,
            outcome=report.outcome,
            start=getattr(report, "start", None),
            stop=getattr(report, "stop", None),
            trace=trace,
        )
        if acc is not None and self.state.ledger is not None:
            self.state.ledger.record(acc.phase, acc.status)
