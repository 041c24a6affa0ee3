"""Virtual time for the fake cluster: move the :class:`FakeClock` when every client is blocked waiting.

A check that waits with a *watch* (``aicr_pytest.kube.wait``) never sleeps on its clock, so under a
plain :class:`~aicr_pytest.testing.clock.FakeClock` nothing would move the simulation and the watch
would only end at its wall-clock timeout. With auto-advance (``FakeCluster(auto_advance=True)`` or
``with fc.auto_advancing(): ...``) the fake behaves like the event loop of a discrete-event
simulator: when the cluster is *quiescent* it advances the clock straight to the next thing that
can happen:

* the next scheduled timer (the simulator's timelines -- pod start, pod exit, Job deadlines -- are
  timers), or
* the earliest ``timeoutSeconds`` deadline of a blocked watch, so a wait that can never be satisfied
  ends (and the client's own deadline passes) at once in real time.

Quiescent means all of:

1. at least one live client is blocked in a watch (or a followed log) with nothing pending for it;
2. no other request is being served (:class:`Activity` counts requests from the moment the server
   reads them until the response is written; a streaming response counts as busy except while its
   handler waits for the store);
3. every blocked waiter has looked at the store's current state (its resourceVersion, log writes and
   clock time) -- so an event produced by the previous advance has been delivered first;
4. nothing was delivered to a client, and no request ended, for ``settle`` seconds of real time (so
   the client has processed what it received and is back in its read);
5. no facade client *in this process* still holds a line it was streamed
   (:func:`aicr_pytest.kube.client.streams_in_hand` is 0): a client that is slow to handle an event
   (a loaded machine) is not mistaken for a blocked one, so the clock never jumps past the moment it
   was handling. This makes in-process clients (checks run by pytester) deterministic however long
   they take; clients in another process still rely on ``settle``.

Waiters whose client hung up do not count. Advances are serialized with any other
:meth:`FakeClock.advance` (a test or a check sleeping on the clock), and each one re-checks
quiescence under that lock, so a test that moves the clock itself is never raced.

Determinism: with a client that talks to the fake from one thread (a check run in-process by
pytester does), the sequence of advances is the sequence of timers and deadlines, independent of
real-time scheduling, provided the client handles each event within ``settle`` seconds (it decodes
one JSON line). Clients that keep a watch open while other threads of theirs compute are outside
that guarantee -- use manual :meth:`FakeClock.advance` there. A :class:`RealClock` (``aicr-pytest
simulate``) never auto-advances: real time moves by itself.

Timer callbacks run on the advancer's thread; an exception from one is logged and kept in
:attr:`AutoAdvancer.errors` (the clock stops at that timer, later timers still fire).
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from aicr_pytest.testing.clock import FakeClock

__all__ = ["DEFAULT_SETTLE_S", "Activity", "AutoAdvancer"]

log = logging.getLogger("aicr_pytest.testing.virtualtime")

#: Real seconds the cluster must stay quiet after the last delivery before the clock jumps.
DEFAULT_SETTLE_S = 0.01
#: Longest real pause between two looks at the state (changes the server does not announce:
#: a client hanging up).
_RECHECK_S = 0.05


def _clients_in_hand() -> int:
    """:func:`aicr_pytest.kube.client.streams_in_hand` of the facade loaded in this process (looked up
    each time: an in-process pytester run may load its own copy), 0 when none is loaded."""
    client = sys.modules.get("aicr_pytest.kube.client")
    count = getattr(client, "streams_in_hand", None)
    return int(count()) if callable(count) else 0


@dataclass
class _Waiter:
    deadline: float | None
    seen: tuple[int, int]
    seen_time: float
    stopped: Callable[[], bool]


class Activity:
    """What the fake API server is doing, as far as virtual time cares (thread-safe).

    ``version()`` returns a token that changes with every store write (resourceVersion, log writes);
    ``now()`` the clock's time. Waiters register while holding the store lock, so this class never
    takes the store lock itself (lock order: store, then activity).
    """

    def __init__(self, version: Callable[[], tuple[int, int]], now: Callable[[], float]) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._version = version
        self._now = now
        self._busy = 0
        self._waiters: dict[int, _Waiter] = {}
        self._ids = itertools.count()
        self._last = time.monotonic()

    # -- what the server reports -----------------------------------------------------------------
    def request_started(self) -> None:
        with self._cond:
            self._busy += 1
            self._last = time.monotonic()
            self._cond.notify_all()

    def request_finished(self) -> None:
        with self._cond:
            self._busy -= 1
            self._last = time.monotonic()
            self._cond.notify_all()

    def waiting(
        self,
        *,
        deadline: float | None,
        stopped: Callable[[], bool],
        delivered: bool,
        seen: tuple[int, int],
        seen_time: float,
    ) -> int:
        """A streaming handler is about to block on the store (call with the store lock held).

        ``deadline``: the clock time the stream ends by itself (watch ``timeoutSeconds``), if any;
        ``delivered``: it wrote something to its client since it last waited; ``seen`` /
        ``seen_time``: the store version and clock time its last look was based on. Returns a token
        for :meth:`resumed`.
        """
        with self._cond:
            token = next(self._ids)
            self._waiters[token] = _Waiter(deadline, seen, seen_time, stopped)
            self._busy -= 1
            if delivered:
                self._last = time.monotonic()
            self._cond.notify_all()
            return token

    def resumed(self, token: int) -> None:
        with self._cond:
            if self._waiters.pop(token, None) is not None:
                self._busy += 1
            self._cond.notify_all()

    # -- what the advancer asks ------------------------------------------------------------------
    def _quiet_deadline(self) -> tuple[bool, float | None]:
        """(quiescent apart from the settle time, the earliest live waiter deadline)."""
        if self._busy > 0 or not self._waiters or _clients_in_hand():
            return False, None
        version, now = self._version(), self._now()
        live = 0
        earliest: float | None = None
        for w in self._waiters.values():
            if w.stopped():
                continue  # the client hung up: nobody is blocked on this one
            live += 1
            if w.seen != version or w.seen_time != now:
                return False, None  # it has not looked at the latest state yet
            if w.deadline is not None:
                if w.deadline <= now:
                    return False, None  # due to end by itself
                earliest = w.deadline if earliest is None else min(earliest, w.deadline)
        return live > 0, earliest

    def quiet_target(self, settle: float, next_timer: float | None) -> float | None:
        """Where the clock may jump now (the next timer or waiter deadline), or None."""
        with self._cond:
            quiet, deadline = self._quiet_deadline()
            if not quiet or time.monotonic() - self._last < settle:
                return None
            candidates = [t for t in (next_timer, deadline) if t is not None]
            return min(candidates) if candidates else None

    def wait_quiet(self, settle: float, stop: threading.Event) -> bool:
        """Block until the cluster has been quiescent for ``settle`` seconds (False once stopped)."""
        with self._cond:
            while not stop.is_set():
                quiet, _ = self._quiet_deadline()
                if quiet:
                    left = settle - (time.monotonic() - self._last)
                    if left <= 0:
                        return True
                    self._cond.wait(min(left, _RECHECK_S))
                else:
                    self._cond.wait(_RECHECK_S)
            return False

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    @property
    def busy(self) -> int:
        with self._cond:
            return self._busy

    @property
    def waiters(self) -> int:
        with self._cond:
            return len(self._waiters)


class AutoAdvancer:
    """A daemon thread that advances ``clock`` whenever ``activity`` is quiescent (see the module doc)."""

    def __init__(self, clock: FakeClock, activity: Activity, *, settle: float = DEFAULT_SETTLE_S) -> None:
        self.clock = clock
        self.activity = activity
        self.settle = settle
        #: Exceptions raised by timer callbacks fired by this thread.
        self.errors: list[BaseException] = []
        #: How many advances this thread made (for tests and diagnostics).
        self.advances = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> AutoAdvancer:
        if self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="fake-clock-auto-advance", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.activity.wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None

    def step(self) -> bool:
        """Advance once if the cluster is quiescent now; True when the clock was moved."""
        with self.clock.advance_lock:  # no test or check advances the clock meanwhile
            target = self.activity.quiet_target(self.settle, self.clock.next_timer())
            if target is None or self._stop.is_set():
                return False
            self.advances += 1
            try:
                self.clock.advance(max(0.0, target - self.clock.time()))
            except Exception as exc:  # a simulator callback failed: keep it for the test
                log.warning("timer callback failed during auto-advance: %r", exc)
                self.errors.append(exc)
            return True

    def _run(self) -> None:
        while self.activity.wait_quiet(self.settle, self._stop):
            if not self.step():
                # Quiescent but nothing scheduled and no deadline (or raced): look again shortly.
                self._stop.wait(_RECHECK_S)
