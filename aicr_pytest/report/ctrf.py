"""CTRF (Common Test Report Format) documents, emitted natively.

Schema-valid by construction: every field we write is defined by the official CTRF schema, and
anything aicr-pytest adds lives under ``extra`` (the schema forbids unknown properties elsewhere).
``specVersion`` is AICR's ``0.0.1`` for drop-in compatibility; ``tests`` is never ``null``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field

from aicr_pytest.core.version import __version__
from aicr_pytest.core.writable import write_output

SPEC_VERSION = "0.0.1"
TOOL_NAME = "aicr-pytest"

Status = Literal["passed", "failed", "skipped", "pending", "other"]


class TestResult(BaseModel):
    """One CTRF test entry (one check, or one readiness/snapshot constraint)."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest test class

    name: str = Field(min_length=1)
    status: Status
    duration: int = 0
    suite: list[str]
    message: str | None = None
    stdout: list[str] | None = None
    extra: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "status": self.status,
            "duration": self.duration,
            "suite": self.suite,
        }
        if self.message:
            data["message"] = self.message
        if self.stdout:
            data["stdout"] = self.stdout
        if self.extra:
            data["extra"] = self.extra
        return data


def summarize(tests: Sequence[TestResult]) -> dict[str, int]:
    counts = {"tests": len(tests), "passed": 0, "failed": 0, "skipped": 0, "pending": 0, "other": 0}
    for test in tests:
        counts[test.status] += 1
    return counts


def build_report(
    tests: Sequence[TestResult],
    *,
    start_ms: int,
    stop_ms: int,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole CTRF document, tests in the order given."""
    summary: dict[str, Any] = summarize(tests)
    summary["start"] = int(start_ms)
    summary["stop"] = int(max(stop_ms, start_ms))
    report: dict[str, Any] = {
        "reportFormat": "CTRF",
        "specVersion": SPEC_VERSION,
        "timestamp": datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "generatedBy": TOOL_NAME,
        "results": {
            "tool": {"name": TOOL_NAME, "version": __version__},
            "summary": summary,
            "tests": [t.to_json() for t in tests],
        },
    }
    if extra:
        report["extra"] = extra
    return report


def dumps(report: dict[str, Any]) -> str:
    """Pretty JSON (2-space indent, trailing newline), like ``aicr validate``."""
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def write(report: dict[str, Any], target: str, stdout: TextIO, flag: str = "CTRF report") -> None:
    """Write the report to ``target``: a file path (parents created, written atomically), or ``-``
    for ``stdout``.

    When the file cannot be written the report goes to a fresh file in the temporary directory and
    :class:`~aicr_pytest.core.writable.OutputError` says where in one line
    (:func:`aicr_pytest.core.writable.write_output`); the caller ends the run non-zero.
    """
    if target == "-":
        stdout.write(dumps(report))
        stdout.flush()
        return
    write_output(target, dumps(report), flag)
