"""Signals around a run's cluster work: SIGTERM unwinds like Ctrl-C, and cleanup always finishes.

* :func:`install_signal_handlers` — within the block SIGTERM raises :class:`Terminated` (a
  ``KeyboardInterrupt``), so ``finally:`` blocks (cleanup) run;
* :func:`defer_signals` — around cleanup: SIGINT, SIGTERM and the deadline's SIGALRM are held
  until it ends (a second interrupt too, announced); a third raises :class:`CleanupAbandoned`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into a ``KeyboardInterrupt`` so ``finally:`` blocks (cleanup) run."""


class CleanupAbandoned(Terminated):
    """A third SIGINT/SIGTERM during cleanup: the user gives up on it (what is left is reported)."""


#: the signals :func:`defer_signals` holds: Ctrl-C, ``kill``/CI cancellation, a closed terminal,
#: the whole-run deadline
HELD_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)
#: what unwinds like Ctrl-C within :func:`install_signal_handlers` (SIGHUP: a closed terminal or SSH)
UNWINDING_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)
#: how many SIGINT/SIGTERM cleanup sits out; one more abandons it
CLEANUP_INSIST = 3
MSG_CLEANUP_HOLDING = (
    "aicr-pytest: finishing cleanup first, so nothing is left in the cluster "
    "(interrupt once more to abandon it and keep what is left)"
)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"received signal {signum}")


@contextlib.contextmanager
def install_signal_handlers() -> Iterator[None]:
    """Within the block SIGTERM and SIGHUP raise :class:`Terminated` (a ``KeyboardInterrupt``).

    pytest already turns SIGINT (Ctrl-C) into ``KeyboardInterrupt`` and unwinds fixtures; SIGTERM
    (``kubectl delete pod``, CI cancellation, ``timeout``) would otherwise kill the process with no
    cleanup.  A Python handler already in place (the plugin's, which records ``interrupted by
    SIGTERM``) is kept: it unwinds the same way.  Outside the main thread this is a no-op (Python
    only delivers signals there).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Any] = {}
    for s in UNWINDING_SIGNALS:
        current = signal.getsignal(s)
        if callable(current) or current is signal.SIG_IGN:  # the run's own handler; or `nohup`
            continue
        previous[s] = signal.signal(s, _raise_terminated)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _notify(line: str) -> None:
    import sys

    print(line, file=sys.stderr, flush=True)


def _redeliver(signum: int, handler: Any) -> None:
    """Act on a signal held during cleanup as its handler before cleanup would have."""
    if callable(handler):  # e.g. the plugin's: raises with the run's reason (SIGTERM, the deadline)
        handler(signum, None)
        return
    if handler == signal.SIG_IGN:
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt("interrupted during cleanup (cleanup completed first)")
    raise Terminated(f"received signal {signum} during cleanup (cleanup completed first)")


@contextlib.contextmanager
def defer_signals(notify: Callable[[str], None] = _notify) -> Iterator[None]:
    """Hold SIGINT, SIGTERM and the deadline's SIGALRM until the block ends, then act on the first.

    Cleanup runs to completion whatever ends the run: the first signal is held quietly, the
    second with a line saying so (``notify``), and only a third SIGINT/SIGTERM raises
    :class:`CleanupAbandoned` inside the block.  Afterwards the first signal held is handed to the
    handler that was in place before (so the run records the reason it really stopped for).  A
    signal the process ignores (SIGINT in a background job of a non-interactive shell) stays ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    insisted = [0]
    previous = {s: h for s in HELD_SIGNALS if (h := signal.getsignal(s)) is not signal.SIG_IGN}

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if signum == signal.SIGALRM:
            return
        insisted[0] += 1
        if insisted[0] >= CLEANUP_INSIST:
            raise CleanupAbandoned(f"received signal {signum} {insisted[0]} times during cleanup")
        if insisted[0] == CLEANUP_INSIST - 1:
            notify(MSG_CLEANUP_HOLDING)

    for s in previous:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if received:
        _redeliver(received[0], previous[signal.Signals(received[0])])


__all__ = [
    "CLEANUP_INSIST",
    "HELD_SIGNALS",
    "MSG_CLEANUP_HOLDING",
    "UNWINDING_SIGNALS",
    "CleanupAbandoned",
    "Terminated",
    "defer_signals",
    "install_signal_handlers",
]
