"""AICR's timeouts and intervals (its ``pkg/defaults``, in seconds) and the GPU checks' work budget."""

from __future__ import annotations

from typing import Final

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.core.goduration import format_go_duration

__all__ = [
    "COLLECTOR_K8S_TIMEOUT",
    "CO_SCHEDULE_WINDOW",
    "DRA_TEST_POD_TIMEOUT",
    "GANG_TEST_POD_TIMEOUT",
    "GPU_CLEANUP_RESERVE",
    "GPU_MIN_WORK",
    "K8S_CLEANUP_TIMEOUT",
    "K8S_POD_READY_TIMEOUT",
    "MSG_WORK_BUDGET",
    "POD_POLL_INTERVAL",
    "RESOURCE_VERIFICATION_TIMEOUT",
    "SA_PROVISION_TIMEOUT",
    "gpu_work_budget",
]

# --- AICR's timeouts and intervals, seconds ----------------------------------------------------------
POD_POLL_INTERVAL: Final = 0.5
K8S_POD_READY_TIMEOUT: Final = 120.0
K8S_CLEANUP_TIMEOUT: Final = 30.0
DRA_TEST_POD_TIMEOUT: Final = 300.0
GANG_TEST_POD_TIMEOUT: Final = 300.0
CO_SCHEDULE_WINDOW: Final = 30.0
COLLECTOR_K8S_TIMEOUT: Final = 60.0
RESOURCE_VERIFICATION_TIMEOUT: Final = 10.0
SA_PROVISION_TIMEOUT: Final = 15.0
#: GPU checks: what the deadline must leave for cleanup (30 s cleanup + 60 s skew/flush) and work
GPU_CLEANUP_RESERVE: Final = 90.0
GPU_MIN_WORK: Final = 30.0

MSG_WORK_BUDGET = (
    "[TIMEOUT] check timeout too short to guarantee cleanup: {remaining} remain until the deadline but at "
    "least {needed} is needed ({work} minimum work + {reserve} cleanup reserve) — no test resources were "
    "created; raise the check's catalog timeout"
)


# --- the GPU work budget -----------------------------------------------------------------------------


def gpu_work_budget(remaining: float | None, fallback: float) -> float:
    """Seconds the GPU checks may spend before cleanup: ``remaining - 90 s``; at least 30 s must be
    left, else ``other`` before anything is created. ``remaining`` ``None`` (no deadline) → ``fallback``."""
    if remaining is None:
        return fallback
    budget = remaining - GPU_CLEANUP_RESERVE
    if budget < GPU_MIN_WORK:
        raise Inconclusive(
            MSG_WORK_BUDGET.format(
                remaining=format_go_duration(max(0.0, remaining)),
                needed=format_go_duration(GPU_MIN_WORK + GPU_CLEANUP_RESERVE),
                work=format_go_duration(GPU_MIN_WORK),
                reserve=format_go_duration(GPU_CLEANUP_RESERVE),
            )
        )
    return budget
