"""The clock the facade reads deadlines from and sleeps on.

Structurally compatible with :class:`aicr_pytest.testing.clock.FakeClock`: anything with
``time()`` (epoch seconds) and ``sleep(seconds)`` will do, so tests inject a fake clock and waits,
backoffs and deadlines run in virtual time.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time and real sleeps."""

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]
