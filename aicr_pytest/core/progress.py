"""Progress lines for long waits: what a check waits for, and how long it has left.

A wait loop makes one :class:`Waiting` (``what`` it waits for, its deadline on the loop's clock) and
calls :meth:`Waiting.tick` on every turn; a line goes out when :data:`EVERY_S` seconds passed since
the wait began or since the last line, so a wait that ends quickly prints nothing and a long one
prints at least every 10 s (as long as the loop turns at least that often: watch-based waits cap
each watch window at :data:`EVERY_S` while a sink is installed, see :func:`active`)::

    waiting for pods gpu-operator/nvidia-smi-ab12 to succeed: phase=Pending; 4m50s left

Lines go to the process-wide sink (:func:`install`); with none installed (library use, unit
tests) :meth:`Waiting.tick` only keeps time.  The plugin installs a sink that writes to stderr
(also in xdist workers, whose stderr is the controller's).  Clock-driven and pure: tests drive it
with a fake clock and a list as the sink.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Final

from aicr_pytest.core.clock import Clock

#: the longest silence while a check waits
EVERY_S: Final = 10.0
LINE: Final = "waiting for {what}{state}; {left} left"
LINE_NO_DEADLINE: Final = "waiting for {what}{state}; {elapsed} so far"

Sink = Callable[[str], None]

_lock = threading.Lock()
_sink: Sink | None = None


def install(sink: Sink | None) -> Sink | None:
    """Make ``sink`` receive every progress line of this process; returns the previous sink."""
    global _sink
    with _lock:
        previous, _sink = _sink, sink
    return previous


def active() -> bool:
    """Whether progress lines go anywhere (waits then keep their turns short enough to tell)."""
    return _sink is not None


def emit(line: str) -> None:
    """Send one line to the installed sink (dropped when there is none)."""
    sink = _sink
    if sink is not None:
        sink(line)


def format_left(seconds: float) -> str:
    """Whole seconds, Go-style: ``4m50s``, ``1h0m5s``, ``9s``, ``0s``."""
    s = max(0, math.ceil(seconds))
    hours, rest = divmod(s, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


class Waiting:
    """One wait's progress: a line at most and at least every ``every`` seconds of its clock."""

    def __init__(
        self,
        what: str,
        *,
        clock: Clock,
        deadline: float | None = None,
        every: float = EVERY_S,
        sink: Sink | None = None,
    ) -> None:
        self.what = what
        self.clock = clock
        self.deadline = deadline
        self.every = every
        self._sink = sink
        self._last = clock.time()
        self._start = self._last
        self.lines = 0

    def line(self, state: str | None = None) -> str:
        """The line as it reads now."""
        now = self.clock.time()
        tail = f": {state}" if state else ""
        if self.deadline is None:
            return LINE_NO_DEADLINE.format(what=self.what, state=tail, elapsed=format_left(now - self._start))
        return LINE.format(what=self.what, state=tail, left=format_left(self.deadline - now))

    def tick(self, state: str | Callable[[], str] | None = None) -> bool:
        """Emit the line when it is due; ``state`` says where the wait stands (``phase=Pending``).

        ``state`` may be a function: it is called only when a line goes out.
        """
        now = self.clock.time()
        if now - self._last < self.every:
            return False
        self._last = now
        text = self.line(state() if callable(state) else state)
        if self._sink is not None:
            self._sink(text)
        else:
            emit(text)
        self.lines += 1
        return True


__all__ = [
    "EVERY_S",
    "LINE",
    "LINE_NO_DEADLINE",
    "Sink",
    "Waiting",
    "active",
    "emit",
    "format_left",
    "install",
]
