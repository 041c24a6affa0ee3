"""The one clock protocol: what checks, families and the facade read deadlines from and sleep on.

Anything with ``time()`` (seconds) and ``sleep(seconds)`` is a :class:`Clock`, so tests inject a
fake clock (:class:`aicr_pytest.testing.clock.FakeClock` fits) and waits, backoffs and deadlines run
in virtual time.  ``time()`` readings are only ever compared with other readings of the same clock
(deadlines, intervals), never with Kubernetes timestamps, so :class:`SystemClock` is monotonic: a
wall-clock step (NTP, a suspended laptop) cannot stretch or cut a deadline.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds on this clock's own scale (only differences between readings mean anything)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass on this clock (negative values sleep not at all)."""
        ...


class SystemClock:
    """``time.monotonic`` and real sleeps."""

    def time(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


SYSTEM_CLOCK: Clock = SystemClock()

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]
