"""From collected per-check results to the CTRF document and the phase summary (no pytest here)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core.constraints import ConstraintResult, format_readiness_failure
from aicr_pytest.report import ctrf, outcome


@dataclass
class ResultAccumulator:
    """Reports of one item (setup/call/teardown) until the item is finished."""

    name: str
    phase: str
    order: int
    kind: str
    status: str = "passed"
    message: str | None = None
    stdout: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    decided: bool = False


def readiness_tests(results: Sequence[ConstraintResult]) -> list[ctrf.TestResult]:
    """Readiness constraints as CTRF tests under suite ``["readiness"]``."""
    tests: list[ctrf.TestResult] = []
    for r in results:
        tests.append(
            ctrf.TestResult(
                name=r.name,
                status="passed" if r.passed else "failed",
                suite=["readiness"],
                message=None if r.passed else format_readiness_failure(r),
                extra={"aicr.severity": r.severity},
            )
        )
    return tests


def build_ctrf(
    results: Sequence[ResultAccumulator],
    *,
    readiness: Sequence[ConstraintResult] = (),
    start_ms: int,
    run_id: str,
) -> dict[str, Any]:
    """CTRF for a run: readiness results (when given) first, then checks in run order."""
    tests: list[ctrf.TestResult] = readiness_tests(readiness)
    for acc in sorted(results, key=lambda a: a.order):
        stdout = outcome.cap_stdout(acc.stdout) if acc.stdout else None
        extra = dict(acc.extra)
        if acc.kind == "placeholder":
            extra["aicr.notImplemented"] = True
        tests.append(
            ctrf.TestResult(
                name=acc.name,
                status=acc.status,  # type: ignore[arg-type]
                duration=round(acc.duration_s * 1000),
                suite=[acc.phase],
                message=acc.message,
                stdout=stdout,
                extra=extra or None,
            )
        )
    return ctrf.build_report(
        tests, start_ms=start_ms, stop_ms=int(time.time() * 1000), extra={"aicr.runId": run_id}
    )


def phase_table(
    phases: Sequence[str], results: Sequence[ResultAccumulator]
) -> list[tuple[str, str, dict[str, int]]]:
    """(phase, aggregated status, counts) for each phase, in run order."""
    rows = []
    for phase in phases:
        statuses = [a.status for a in results if a.phase == phase]
        counts = {s: statuses.count(s) for s in ("passed", "failed", "skipped", "other")}
        rows.append((phase, outcome.phase_status(statuses), counts))
    return rows
