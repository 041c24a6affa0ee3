"""Injectable clocks for the fake cluster.

The fake API server stamps ``creationTimestamp``/``deletionTimestamp``/condition times from a
:class:`TimerClock`, and the simulator drives its timeline (pod start, pod completion, Job deadlines)
from timers registered on it. A :class:`TimerClock` is a :class:`aicr_pytest.core.clock.Clock` (the
one clock protocol: ``time()`` and ``sleep()``) with timers and listeners, so the fake cluster's clock
can be handed to any check or facade call that takes a clock.

* :class:`FakeClock` never reads the wall clock: time only moves when a test calls
  :meth:`FakeClock.advance` or :meth:`FakeClock.sleep`, and timers due in that interval fire
  synchronously, in order, in the caller's thread. This is what makes scenarios deterministic
  and fast (no real sleeps).
* :class:`RealClock` follows the wall clock and fires timers from a daemon thread; it is used by
  ``aicr-pytest simulate`` where a human (or a real check run) watches the cluster evolve.

A :class:`FakeClock` can also be moved by the fake cluster itself when every client is blocked in a
watch ("auto-advance", see :mod:`aicr_pytest.testing.virtualtime`); all advances, manual or not,
are serialized by :attr:`FakeClock.advance_lock`.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aicr_pytest.core.clock import Clock

__all__ = ["FakeClock", "RealClock", "TimerClock", "format_time"]

# 2026-01-01T00:00:00Z: a fixed, recognisable epoch for fake timestamps.
DEFAULT_EPOCH = 1767225600.0


def format_time(seconds: float) -> str:
    """RFC 3339 timestamp (second precision, ``Z`` suffix) as Kubernetes serializes ``metav1.Time``."""
    return datetime.fromtimestamp(int(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class TimerClock(ABC):
    """A :class:`~aicr_pytest.core.clock.Clock` (``time()`` in epoch seconds, ``sleep()``) with timers,
    and listeners notified when time moves."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._listeners: list[Callable[[], None]] = []

    # -- reading -------------------------------------------------------------------------------
    @abstractmethod
    def time(self) -> float:
        """Implemented by each concrete subclass."""

    @abstractmethod
    def sleep(self, seconds: float) -> None:
        """Implemented by each concrete subclass."""

    def now(self) -> datetime:
        """The current time as an aware UTC ``datetime``."""
        return datetime.fromtimestamp(self.time(), tz=UTC)

    def timestamp(self) -> str:
        """The current time formatted like a Kubernetes timestamp."""
        return format_time(self.time())

    # -- timers ----------------------------------------------------------------------------------
    def call_at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the clock reaches ``when`` (epoch seconds)."""
        with self._lock:
            heapq.heappush(self._timers, (when, next(self._seq), callback))
        self._timer_added()

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` ``delay`` seconds from now (``delay <= 0`` still waits for a tick)."""
        self.call_at(self.time() + max(0.0, delay), callback)

    def pending_timers(self) -> int:
        with self._lock:
            return len(self._timers)

    def next_timer(self) -> float | None:
        """When the earliest pending timer is due (epoch seconds), or None."""
        with self._lock:
            return self._timers[0][0] if self._timers else None

    def add_listener(self, listener: Callable[[], None]) -> None:
        """``listener()`` is called (without locks held) every time the clock moves."""
        with self._lock:
            self._listeners.append(listener)

    def _timer_added(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Hook for clocks that run timers from a thread."""

    def _pop_due(self, until: float) -> tuple[float, Callable[[], None]] | None:
        with self._lock:
            if self._timers and self._timers[0][0] <= until:
                when, _, cb = heapq.heappop(self._timers)
                return when, cb
            return None

    def _notify(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()


class FakeClock(TimerClock):
    """A manual clock: time moves only through :meth:`advance` / :meth:`sleep`.

    ``advance(seconds)`` fires every timer due up to the new time, in time order, setting the
    clock to each timer's due time before calling it (so timestamps written by the callback are
    exact). Timers scheduled by callbacks within the window also fire.
    """

    def __init__(self, start: float = DEFAULT_EPOCH) -> None:
        super().__init__()
        self._now = float(start)
        #: Held for the whole of every :meth:`advance` (re-entrant: a timer callback may advance);
        #: the auto-advancer holds it while it decides and moves, so it never races a test.
        self.advance_lock = threading.RLock()

    def time(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` and fire all timers due in between."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self.advance_lock:
            with self._lock:
                target = self._now + seconds
            while True:
                due = self._pop_due(target)
                if due is None:
                    break
                when, callback = due
                with self._lock:
                    self._now = max(self._now, when)
                callback()
                self._notify()
            with self._lock:
                self._now = max(self._now, target)
            self._notify()

    def sleep(self, seconds: float) -> None:
        """Same as :meth:`advance`: code under test that sleeps on this clock returns at once."""
        self.advance(max(0.0, seconds))

    def run_until_idle(self, max_seconds: float = 86400.0) -> None:
        """Advance to each pending timer in turn until none is left (bounded by ``max_seconds``)."""
        deadline = self.time() + max_seconds
        while True:
            with self._lock:
                if not self._timers or self._timers[0][0] > deadline:
                    return
                step = max(0.0, self._timers[0][0] - self._now)
            self.advance(step)


class RealClock(TimerClock):
    """Wall-clock time; timers run on a daemon thread (used by ``aicr-pytest simulate``)."""

    def __init__(self) -> None:
        super().__init__()
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    def _timer_added(self) -> None:
        with self._lock:
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(target=self._run, name="fake-clock", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            due = self._pop_due(self.time())
            if due is not None:
                due[1]()
                self._notify()
                continue
            with self._lock:
                delay = self._timers[0][0] - self.time() if self._timers else 1.0
            self._wake.wait(timeout=max(0.01, min(delay, 1.0)))
            self._wake.clear()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()


if TYPE_CHECKING:  # statically: every TimerClock is a core Clock

    def _is_core_clock(clock: TimerClock) -> Clock:
        return clock
