"""CTRF (Common Test Report Format) documents, emitted natively.

Schema-valid by construction: every field we write is defined by the official CTRF schema, and
anything aicr-pytest adds lives under ``extra`` (the schema forbids unknown properties elsewhere).
``specVersion`` is the one the official schema's examples declare (``1.0.0``); ``tests`` is never
``null``.  What a dashboard needs to follow a check from run to run is written too: ``reportId`` (a
fresh UUID per document), ``runId``, a stable ``id``/``testId`` per test (:func:`stable_test_id`),
``start``/``stop``, ``filePath``, ``trace`` on failure, ``retries``/``retryAttempts``/``flaky`` when
pytest-rerunfailures reran a check, and ``environment``.  ``baseline`` and ``insights`` are accepted by
:func:`build_report` as they are (a run history computes them; this module only places them).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field

from aicr_pytest.core.version import __version__
from aicr_pytest.core.writable import write_output

SPEC_VERSION = "1.0.0"
TOOL_NAME = "aicr-pytest"
#: the uuid5 namespace of :func:`stable_test_id` (fixed forever: changing it changes every test id)
TEST_ID_NAMESPACE = uuid.UUID("6f1c0d0e-5a8b-4c1e-9a57-6a1c2b7e4d10")

Status = Literal["passed", "failed", "skipped", "pending", "other"]


def stable_test_id(recipe: str, phase: str, name: str) -> str:
    """The same check (``name``) of the same phase on the same recipe gets the same id, run after run
    (a uuid5 of the three, so the schema's ``format: uuid`` holds)."""
    return str(uuid.uuid5(TEST_ID_NAMESPACE, "\x1f".join((recipe, phase, name))))


class RetryAttempt(BaseModel):
    """One attempt that came before a test's final one (pytest-rerunfailures reran the check)."""

    model_config = ConfigDict(extra="forbid")

    attempt: int = Field(ge=1)
    status: Status
    duration: int = 0
    message: str | None = None
    trace: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"attempt": self.attempt, "status": self.status, "duration": self.duration}
        if self.message:
            data["message"] = self.message
        if self.trace:
            data["trace"] = self.trace
        return data


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
    #: :func:`stable_test_id` (written as both ``id`` and ``testId``)
    id: str | None = None
    start: int | None = None
    stop: int | None = None
    #: the module that defines the check (the bundled ``checks/…`` file)
    file_path: str | None = None
    #: the failure's traceback (failed and other tests only)
    trace: str | None = None
    #: attempts before the final one (pytest-rerunfailures); ``retries`` is their number
    retry_attempts: list[RetryAttempt] = Field(default_factory=list)
    #: per-test ``insights`` (a run history fills it when a baseline is used)
    insights: dict[str, Any] | None = None

    @property
    def retries(self) -> int:
        return len(self.retry_attempts)

    @property
    def flaky(self) -> bool:
        """Passed after one or more failed attempts (the CTRF spec's definition)."""
        return self.status == "passed" and any(a.status != "passed" for a in self.retry_attempts)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.id:
            data["id"] = self.id
            data["testId"] = self.id
        data.update({"name": self.name, "status": self.status, "duration": self.duration})
        if self.start is not None:
            data["start"] = self.start
            data["stop"] = max(self.stop if self.stop is not None else self.start, self.start)
        data["suite"] = self.suite
        if self.message:
            data["message"] = self.message
        if self.trace and self.status in ("failed", "other"):
            data["trace"] = self.trace
        if self.file_path:
            data["filePath"] = self.file_path
        if self.retry_attempts:
            data["retries"] = self.retries
            data["retryAttempts"] = [a.to_json() for a in self.retry_attempts]
            data["flaky"] = self.flaky
        if self.stdout:
            data["stdout"] = self.stdout
        if self.insights:
            data["insights"] = self.insights
        if self.extra:
            data["extra"] = self.extra
        return data


def summarize(tests: Sequence[TestResult]) -> dict[str, int]:
    counts = {"tests": len(tests), "passed": 0, "failed": 0, "skipped": 0, "pending": 0, "other": 0}
    for test in tests:
        counts[test.status] += 1
    counts["flaky"] = sum(1 for t in tests if t.flaky)
    return counts


def environment(
    *,
    cluster: str,
    recipe: str,
    simulated: bool,
    offline: bool = False,
    version: str = __version__,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report's ``results.environment``: which cluster and recipe, by which aicr-pytest.

    ``testEnvironment`` is ``cluster``, ``snapshot only`` (``offline``: ``--no-cluster``) or
    ``SIMULATED``.  A simulated run says so three times over: ``testEnvironment`` is ``SIMULATED``,
    ``healthy`` is false (no real cluster was validated), and ``extra["aicr.simulated"]`` is true.
    """
    env: dict[str, Any] = {
        "reportName": f"aicr-pytest: {recipe} on {cluster}",
        "appName": cluster,
        "testEnvironment": "SIMULATED" if simulated else "snapshot only" if offline else "cluster",
        "extra": {
            "aicr.cluster": cluster,
            "aicr.recipe": recipe,
            "aicr.version": version,
            "aicr.simulated": simulated,
            **(extra or {}),
        },
    }
    if simulated:
        env["reportName"] = "SIMULATED " + env["reportName"]
        env["healthy"] = False
    return env


def build_report(
    tests: Sequence[TestResult],
    *,
    start_ms: int,
    stop_ms: int,
    extra: dict[str, Any] | None = None,
    run_id: str | None = None,
    environment: dict[str, Any] | None = None,
    baseline: dict[str, Any] | None = None,
    insights: dict[str, Any] | None = None,
    report_id: str | None = None,
) -> dict[str, Any]:
    """The whole CTRF document, tests in the order given.

    ``report_id`` defaults to a fresh UUID; ``baseline`` (a reference to an earlier report, the
    schema's ``{"reportId": …}``) and ``insights`` are written as given, when given.
    """
    summary: dict[str, Any] = summarize(tests)
    summary["start"] = int(start_ms)
    summary["stop"] = int(max(stop_ms, start_ms))
    summary["duration"] = summary["stop"] - summary["start"]
    report: dict[str, Any] = {
        "reportFormat": "CTRF",
        "specVersion": SPEC_VERSION,
        "reportId": report_id or str(uuid.uuid4()),
    }
    if run_id:
        report["runId"] = run_id
    report.update(
        {
            "timestamp": datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "generatedBy": TOOL_NAME,
            "results": {
                "tool": {"name": TOOL_NAME, "version": __version__},
                "summary": summary,
                "tests": [t.to_json() for t in tests],
            },
        }
    )
    if environment:
        report["results"]["environment"] = environment
    if insights:
        report["insights"] = insights
    if baseline:
        report["baseline"] = baseline
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
