"""The CTRF report of a run that ended before its first check (the snapshot capture failed or was
interrupted): no test results, and why under ``extra``, so the destination ``-o`` names still gets
a report instead of nothing (a lost report reads like a run that never happened)."""

from __future__ import annotations

import time
from typing import Any, Final

from aicr_pytest.report import ctrf

#: ``extra`` key: why the run ended before any check (one line)
EXTRA_NOT_RUN: Final = "aicr.notRun"


def not_run_report(reason: str, *, start_ms: int, interrupted: str | None = None) -> dict[str, Any]:
    """A CTRF document with no tests; ``reason`` (and ``interrupted``, the signal) under ``extra``."""
    extra: dict[str, Any] = {EXTRA_NOT_RUN: reason}
    if interrupted:
        extra["aicr.interrupted"] = interrupted
    return ctrf.build_report([], start_ms=start_ms, stop_ms=int(time.time() * 1000), extra=extra)


__all__ = ["EXTRA_NOT_RUN", "not_run_report"]
