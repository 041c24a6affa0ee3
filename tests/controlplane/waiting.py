"""Waiting on the real control plane from a test: poll until a probe returns something truthy."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.5) -> T:
    """The first truthy value of ``probe()``; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
