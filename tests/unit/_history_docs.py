"""Small CTRF documents for the history tests: an NCCL run and, optionally, an inference run."""

from __future__ import annotations

from typing import Any


def nccl_test(bw: float, status: str = "passed") -> dict[str, Any]:
    """``nccl-all-reduce-bw`` measuring ``bw`` GB/s against ``>= 300`` (270 with tolerance)."""
    return {
        "name": "nccl-all-reduce-bw",
        "status": status,
        "duration": 1500,
        "suite": ["performance"],
        "extra": {
            "aicr.measurements": [
                {
                    "name": "bus bandwidth",
                    "value": bw,
                    "unit": "GB/s",
                    "constraint": ">= 300",
                    "effectiveThreshold": 270.0,
                }
            ]
        },
    }


def inference_test(ttft: float) -> dict[str, Any]:
    """``inference-perf`` measuring a TTFT p99 of ``ttft`` ms against ``<= 200`` (220 with tolerance)."""
    return {
        "name": "inference-perf",
        "status": "passed",
        "duration": 900,
        "suite": ["performance"],
        "extra": {
            "aicr.measurements": [
                {
                    "name": "inference TTFT p99",
                    "value": ttft,
                    "unit": "ms",
                    "constraint": "<= 200",
                    "effectiveThreshold": 220.0,
                }
            ]
        },
    }


def report(tests: list[dict[str, Any]], *, timestamp: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A CTRF document of ``tests`` (its summary counts the failed ones)."""
    failed = sum(t["status"] == "failed" for t in tests)
    return {
        "reportFormat": "CTRF",
        "timestamp": timestamp,
        "results": {"summary": {"failed": failed, "other": 0}, "tests": tests},
        "extra": extra,
    }
