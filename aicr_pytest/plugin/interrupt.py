"""How a run ends early: SIGINT, SIGTERM, SIGHUP, or the whole-run deadline, all the same way.

Each raises :class:`RunInterrupted` (a ``KeyboardInterrupt``) in the main thread, so pytest unwinds
as on Ctrl-C: every fixture finalizer (cluster cleanup) runs, ``pytest_sessionfinish`` writes the
reports, and ``aicr-pytest validate`` exits 5.  The plugin then marks every item that did not
finish ``other`` with the reason (:func:`reason_of`): ``interrupted by SIGINT``, ``interrupted by
SIGTERM``, ``interrupted by SIGHUP`` (a closed terminal or SSH session) or ``timed out after 5m0s``.

* :class:`StopSignals` and :func:`install_stop_signals` — SIGINT and SIGTERM stop the run once, with their
  reason, and are held while it stops (a second interrupt cannot cut cleanup or the reports short);
* :func:`arm_deadline` — the whole-run deadline (``--timeout``): ``SIGALRM`` after ``seconds``;
  the function it returns cancels it;
* :class:`InterruptWatch` — the plugin object that arms both on the controller of an active run
  (:func:`configure`, from ``pytest_aicr_configure_run``, last of the features), so plain
  ``pytest`` behaves like ``validate``, and owns the bookkeeping: the selected items, and why the
  run stopped (:attr:`InterruptWatch.reason`), which it notes for the report
  (``pytest_aicr_finishing``).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

import pytest

from aicr_pytest.core.goduration import format_go_duration, parse_go_duration
from aicr_pytest.plugin.options import session_run
from aicr_pytest.plugin.state import HINTS_KEY, ITEM_KEY, OutcomeNotes, controller_state
from aicr_pytest.report import results as r

SIGINT_REASON = "interrupted by SIGINT"
SIGTERM_REASON = "interrupted by SIGTERM"
#: a closed terminal or SSH session: handled like SIGTERM (cleanup, full reports), recorded as itself
SIGHUP_REASON = "interrupted by SIGHUP"
TIMEOUT_REASON = "timed out after {duration}"


class RunInterrupted(KeyboardInterrupt):
    """The run must stop now; ``reason`` is what every unfinished item records."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def reason_of(exc: BaseException | None) -> str:
    """The reason an interrupted run records (a plain Ctrl-C is ``interrupted by SIGINT``)."""
    if isinstance(exc, RunInterrupted):
        return exc.reason
    return SIGINT_REASON


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


#: what a second SIGINT/SIGTERM prints once the run is already stopping
MSG_STOPPING = (
    "aicr-pytest: already stopping: cleaning up and writing the reports first "
    "(interrupt twice more to quit at once, leaving both unfinished)"
)
#: SIGINT/SIGTERM received while stopping before the run gives up on cleanup and reports
STOP_INSIST = 3


class StopSignals:
    """SIGINT, SIGTERM and the deadline end the run once, with their reason; later ones are held.

    The first raises :class:`RunInterrupted`.  While the run is stopping (fixtures cleaning up, the
    reports being written) a second SIGINT/SIGTERM only prints :data:`MSG_STOPPING`, so nothing is
    lost to an impatient double Ctrl-C; the third raises ``KeyboardInterrupt`` for a user who
    insists.  A signal held during a cleanup (:func:`aicr_pytest.kube.signals.defer_signals`) is
    handed here once that cleanup is done.
    """

    def __init__(self, notify: Callable[[str], None] | None = None) -> None:
        self.count = 0
        self._notify = notify or (lambda line: print(line, file=sys.stderr, flush=True))

    def stop(self, reason: str) -> None:
        self.count += 1
        if self.count == 1:
            raise RunInterrupted(reason)
        if self.count >= STOP_INSIST:
            raise KeyboardInterrupt(f"interrupted {self.count} times while stopping")
        self._notify(MSG_STOPPING)

    def handler(self, signum: int, frame: FrameType | None) -> None:
        self.stop(signal_reason(signum))


def signal_reason(signum: int) -> str:
    """``interrupted by SIGINT`` / ``SIGHUP`` / ``SIGTERM`` (any other signal reads as SIGTERM)."""
    if signum == signal.SIGINT:
        return SIGINT_REASON
    if signum == getattr(signal, "SIGHUP", None):
        return SIGHUP_REASON
    return SIGTERM_REASON


def install_stop_signals(stop: StopSignals) -> Callable[[], None]:
    """SIGTERM (and SIGINT and SIGHUP, unless the process ignores them: a background job, ``nohup``)
    go to ``stop``; returns the undo."""
    if not _main_thread():
        return lambda: None
    wanted = [signal.SIGTERM]
    for optional in (signal.SIGINT, getattr(signal, "SIGHUP", None)):
        if optional is not None and signal.getsignal(optional) is not signal.SIG_IGN:
            wanted.append(optional)
    previous = {s: signal.signal(s, stop.handler) for s in wanted}

    def undo() -> None:
        for s, h in previous.items():
            signal.signal(s, h)

    return undo


def timeout_seconds(value: Any) -> float | None:
    """A ``--timeout`` value as seconds: a number, or a Go duration (``5m``, ``1h30m``).

    ``None``, ``0`` and ``""`` mean no deadline; anything else that does not parse raises
    ``ValueError`` (the option's own validation should have rejected it first).
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"invalid timeout {value!r}")
    seconds = float(value) if isinstance(value, int | float) else parse_go_duration(str(value))
    if seconds < 0:
        raise ValueError(f"invalid timeout {value!r}")
    return seconds or None


def arm_deadline(seconds: float, stop: StopSignals | None = None) -> Callable[[], None]:
    """End the run with ``timed out after <duration>`` after ``seconds``; returns the disarm.

    Uses ``SIGALRM`` (the main thread of a POSIX process); elsewhere nothing is armed.  With
    ``stop``, the deadline is one more way the run stops (later interrupts are then held).
    """
    if seconds <= 0 or not _main_thread() or not hasattr(signal, "setitimer"):
        return lambda: None
    reason = TIMEOUT_REASON.format(duration=format_go_duration(seconds))

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop is not None:
            stop.stop(reason)  # raises when this is what stops the run; held if it is stopping already
            return
        raise RunInterrupted(reason)

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return disarm


__all__ = [
    "MSG_STOPPING",
    "SIGHUP_REASON",
    "SIGINT_REASON",
    "SIGTERM_REASON",
    "STOP_INSIST",
    "TIMEOUT_REASON",
    "RunInterrupted",
    "StopSignals",
    "arm_deadline",
    "install_stop_signals",
    "reason_of",
    "signal_reason",
    "timeout_seconds",
]


def unfinished_reports(
    collected: Sequence[pytest.Item], results: r.RunResults, reason: str
) -> list[pytest.TestReport]:
    """Reports (call + teardown) that end every item the run did not finish as ``other``; an item
    whose call had already reported (the interrupt came during its cleanup) gets its teardown only.

    ``collected`` are the selected items of this process's collection, ``results`` the
    controller's; on an xdist controller (which collects nothing) only the items a worker had
    started are known.  Fed to ``pytest_runtest_logreport``, the reports reach the CTRF collector,
    JUnit XML and the terminal like any other result.
    """
    verdict: list[tuple[str, Any]] = [
        (r.PROP_STATUS, "other"),
        (r.PROP_MESSAGE, reason),
        r.prop(r.PROP_EXTRA, {r.EXTRA_INTERRUPTED: True}),
    ]
    wanted: dict[str, tuple[tuple[str, int | None, str], list[tuple[str, Any]]]] = {}
    for item in collected:
        if item.nodeid in results.done:
            continue
        keys = (r.PROP_NAME, r.PROP_PHASE, r.PROP_ORDER, r.PROP_KIND, r.PROP_FILE)
        identity: list[tuple[str, Any]] = [(k, v) for k, v in item.user_properties if k in keys]
        wanted[item.nodeid] = (item.location, identity)
    for nodeid, acc in results.pending.items():
        if nodeid not in wanted:
            known: list[tuple[str, Any]] = [
                (r.PROP_NAME, acc.name),
                (r.PROP_PHASE, acc.phase),
                (r.PROP_ORDER, acc.order),
                (r.PROP_KIND, acc.kind),
            ]
            wanted[nodeid] = ((nodeid, None, nodeid), known)
    reports: list[pytest.TestReport] = []
    for nodeid, (location, identity) in wanted.items():
        pending = results.pending.get(nodeid)
        # a check whose verdict was in before the interrupt (it came during its cleanup) keeps it:
        # only its teardown is reported, so it is counted once
        decided = pending is not None and pending.decided
        phases = (("teardown", "passed"),) if decided else (("call", "failed"), ("teardown", "passed"))
        for when, outcome in phases:
            reports.append(
                pytest.TestReport(
                    nodeid=nodeid,
                    location=location,
                    keywords={},
                    outcome=outcome,  # type: ignore[arg-type]
                    longrepr=reason if when == "call" else None,
                    when=when,  # type: ignore[arg-type]
                    user_properties=identity + (verdict if when == "call" else []),
                )
            )
    return reports


def collect_late_hints(collected: Sequence[pytest.Item], results: r.RunResults) -> None:
    """The cleanup hints of items torn down after the run was interrupted (no teardown report
    carried them): kept objects' kubectl commands, or what an abandoned cleanup left."""
    for item in collected:
        for hint in item.stash.get(HINTS_KEY, None) or ():
            if hint not in results.cleanup_hints:
                results.cleanup_hints.append(hint)


__all__ += ["collect_late_hints", "unfinished_reports"]

#: the plugin name of the registered :class:`InterruptWatch`
WATCH_NAME = "aicr-interrupt-watch"


class InterruptWatch:
    """Controller only: on SIGINT, SIGTERM or the deadline, every unfinished item ends ``other``."""

    def __init__(self, config: pytest.Config, results: r.RunResults) -> None:
        self.config = config
        self.results = results
        #: why the run stopped early (``interrupted by SIGINT``, ``timed out after 5m0s``), else ``None``
        self.reason: str | None = None
        #: the selected items in run order (this process's collection; empty on an xdist controller)
        self.collected: list[pytest.Item] = []
        self._undo: list[Callable[[], None]] = []
        self._disarm_deadline: Callable[[], None] | None = None
        self._undo_signals: Callable[[], None] | None = None
        self.stop = StopSignals()

    def arm(self, seconds: float | None) -> None:
        """SIGINT and SIGTERM stop the run once (then are held); with ``seconds``, the deadline too."""
        self._undo_signals = install_stop_signals(self.stop)
        if seconds is not None:
            self._disarm_deadline = arm_deadline(seconds, self.stop)
            self._undo.append(self.stop_deadline)

    def stop_deadline(self) -> None:
        disarm, self._disarm_deadline = self._disarm_deadline, None
        if disarm is not None:
            disarm()

    def disarm(self) -> None:
        """Undo the signal handler and the deadline this run installed."""
        while self._undo:
            self._undo.pop()()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """What will run, after every plugin's selection (``-m``, ``-k``): the items an interrupt ends."""
        self.collected = [item for item in session.items if item.stash.get(ITEM_KEY, None)]

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.disarm()  # the deadline; SIGINT/SIGTERM stay held until the reports are written
        if self.reason is not None:
            return
        self.reason = reason_of(excinfo.value)
        if self.stop.count == 0:  # stopped by a KeyboardInterrupt no signal raised (a test's own)
            self.stop.count = 1
        for report in unfinished_reports(self.collected, self.results, self.reason):
            self.config.hook.pytest_runtest_logreport(report=report)

    def pytest_aicr_finishing(self, session: pytest.Session, notes: OutcomeNotes) -> None:
        """Before the reports: the deadline stops (they are written whatever the clock says), the
        hints of items torn down after the interrupt count, and why the run stopped is noted."""
        self.stop_deadline()
        collect_late_hints(self.collected, self.results)
        notes.interrupted = self.reason

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.disarm()
        undo, self._undo_signals = self._undo_signals, None
        if undo is not None:
            undo()


def configure(config: pytest.Config, results: r.RunResults) -> None:
    """Register the :class:`InterruptWatch`; a ``--timeout`` the user gives also bounds the whole run.

    Its 5m default is AICR's snapshot-agent wait only: as a whole-run bound it would end every
    inference-perf run (up to 30 minutes) and long NCCL sweeps, so only an explicit value arms it."""
    value = session_run(config).run_timeout
    try:
        seconds = timeout_seconds(value)
    except ValueError as err:
        raise pytest.UsageError(f"--timeout: {err}") from None
    watch = InterruptWatch(config, results)
    watch.arm(seconds)
    config.pluginmanager.register(watch, WATCH_NAME)


# last of the run's features: armed after the evidence disclosure prompt
@pytest.hookimpl(trylast=True)
def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    state = controller_state(config)
    if state is not None:
        configure(config, state.results)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=WATCH_NAME)


__all__ += ["WATCH_NAME", "InterruptWatch", "configure", "pytest_aicr_configure_run", "pytest_unconfigure"]
