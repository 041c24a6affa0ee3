"""The run's verdicts on its CNCF checks, in one shape for the checklist filler and the JUnit writer.

A :class:`CheckVerdict` is what one catalog check ended with: ``PASS``, ``FAIL`` or ``SKIP``, the
failure or skip reason, how long it took, the per-feature evidence file it wrote (relative to the
evidence directory) and any log lines.  Two adapters build them: :func:`from_submission` from
``--cncf-submission``'s :class:`~aicr_pytest.evidence.cncf.collector.SubmissionResult`, and
:func:`from_ctrf` from a CTRF report of a normal run (``passed`` -> PASS, ``skipped`` -> SKIP,
``failed`` and everything else -> FAIL: fail closed).  Only checks that answer a requirement of
:mod:`.requirements` are kept.

:func:`requirement_verdict` folds the verdicts of a requirement's checks into one: any FAIL fails
it, else any SKIP skips it, else (all passed) it passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aicr_pytest.evidence.cncf import requirements
from aicr_pytest.evidence.cncf.collector import SubmissionResult
from aicr_pytest.evidence.cncf.verdict import Status

_CTRF_STATUS: Final[dict[str, Status]] = {"passed": "PASS", "skipped": "SKIP"}


@dataclass(frozen=True)
class CheckVerdict:
    """One check's ending (module docstring); ``message`` is empty for a PASS."""

    check: str
    status: Status
    message: str = ""
    duration_s: float = 0.0
    evidence_file: str | None = None
    log: tuple[str, ...] = ()


def from_submission(result: SubmissionResult, evidence_dir: Path) -> tuple[CheckVerdict, ...]:
    """The verdicts of a ``--cncf-submission`` run, each with its evidence file."""
    verdicts: list[CheckVerdict] = []
    for r in result.results:
        if r.feature.check not in requirements.BY_CHECK:
            continue
        try:
            relative = r.path.relative_to(evidence_dir).as_posix()
        except ValueError:
            relative = r.path.name
        message = "" if r.status == "PASS" else r.explanation
        verdicts.append(CheckVerdict(r.feature.check, r.status, message, 0.0, relative, (r.explanation,)))
    return tuple(verdicts)


def from_ctrf(
    report: Mapping[str, Any], evidence_files: Mapping[str, str] | None = None
) -> tuple[CheckVerdict, ...]:
    """The verdicts of a CTRF report's CNCF checks; ``evidence_files`` maps a check to its file."""
    tests = (report.get("results") or {}).get("tests") or []
    verdicts: list[CheckVerdict] = []
    for test in tests if isinstance(tests, list) else ():
        if not isinstance(test, Mapping):
            continue
        name = str(test.get("name"))
        if name not in requirements.BY_CHECK:
            continue
        status = _CTRF_STATUS.get(str(test.get("status")), "FAIL")
        message = str(test.get("message") or "")
        if status == "FAIL" and not message:
            message = f"the check ended {test.get('status')!s}"
        duration = test.get("duration")
        seconds = float(duration) / 1000 if isinstance(duration, int | float) else 0.0
        log = _lines(test.get("stdout"))
        verdicts.append(
            CheckVerdict(
                name,
                status,
                "" if status == "PASS" else message,
                seconds,
                (evidence_files or {}).get(name),
                log,
            )
        )
    return tuple(verdicts)


def _lines(value: Any) -> tuple[str, ...]:
    """CTRF ``stdout``: a list of strings (or, leniently, one string)."""
    if isinstance(value, str):
        return tuple(value.splitlines())
    if isinstance(value, list):
        return tuple(line for item in value for line in str(item).splitlines())
    return ()


def requirement_verdict(
    row: requirements.RequirementMap, verdicts: Iterable[CheckVerdict]
) -> tuple[CheckVerdict, ...]:
    """The verdicts that decide ``row``, in the row's check order.

    Empty -- not checked in this run -- unless every check of the row has a verdict (fail closed: a
    requirement is never decided by part of its checks)."""
    by_check: dict[str, CheckVerdict] = {}
    for v in verdicts:
        by_check.setdefault(v.check, v)
    if not row.checks or any(c not in by_check for c in row.checks):
        return ()
    return tuple(by_check[c] for c in row.checks)


def folded_status(decisive: Sequence[CheckVerdict]) -> Status:
    """Any FAIL -> FAIL, else any SKIP -> SKIP, else PASS (``decisive`` is never empty)."""
    statuses = {v.status for v in decisive}
    if "FAIL" in statuses:
        return "FAIL"
    return "SKIP" if "SKIP" in statuses else "PASS"


__all__ = [
    "CheckVerdict",
    "folded_status",
    "from_ctrf",
    "from_submission",
    "requirement_verdict",
]
