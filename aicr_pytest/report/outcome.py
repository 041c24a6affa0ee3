"""CTRF statuses, the skip messages the run itself gives, stdout caps and RESULT: lines.

Which exception becomes which status is decided in one place, :mod:`aicr_pytest.plugin.outcomes`.
``other`` is failing: it trips ``--fail-fast`` and makes the run exit non-zero (AICR v0.11 exits 0
on ``other``; its own docs call that a quirk).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aicr_pytest.core.gofmt import slog_text_value

STATUSES: tuple[str, ...] = ("passed", "failed", "skipped", "pending", "other")
FAILING: frozenset[str] = frozenset({"failed", "other"})

MAX_STDOUT_LINES = 1000
MAX_LINE_BYTES = 512
RESULT_PREFIX = "RESULT: "

SKIP_NO_CLUSTER = "skipped - no-cluster mode"
SKIP_FAIL_FAST = "skipped due to previous phase failure"
SKIP_READINESS = "skipped - readiness pre-flight failed"
#: the phase table's status of a phase the run did not finish (SIGINT, SIGTERM, ``--timeout``)
INTERRUPTED = "interrupted"


def skip_log_line(reason: str) -> str:
    """The line a check-level skip adds to the check's CTRF ``stdout``, as AICR's in-pod runner logs
    it with Go's slog text handler (less the timestamp): ``level=INFO msg=SKIP reason="…"``."""
    return f"level=INFO msg=SKIP reason={slog_text_value(reason)}"


def truncate_line(line: str) -> str:
    """Cap a line at 512 bytes (UTF-8) with AICR's ``... [truncated N chars]`` marker."""
    raw = line.encode("utf-8")
    if len(raw) <= MAX_LINE_BYTES:
        return line
    kept = raw[:MAX_LINE_BYTES].decode("utf-8", errors="ignore")
    return f"{kept}... [truncated {len(line) - len(kept)} chars]"


def cap_stdout(lines: Iterable[str]) -> list[str]:
    """Keep the last 1000 lines, each capped at 512 bytes."""
    tail = list(lines)[-MAX_STDOUT_LINES:]
    return [truncate_line(line) for line in tail]


def result_summaries(lines: Sequence[str]) -> list[str]:
    """Lines that start with exactly ``RESULT: `` and have a non-empty remainder, prefix stripped."""
    return [line[len(RESULT_PREFIX) :] for line in lines if line.startswith(RESULT_PREFIX) and line[8:]]


def phase_status(statuses: Sequence[str]) -> str:
    """Aggregate a phase: failed > other > skipped (nothing ran, or all skipped) > passed.

    AICR reports a phase whose every entry is skipped as ``passed``; we say ``skipped`` so a
    phase where nothing was verified never reads as a pass.
    """
    if "failed" in statuses:
        return "failed"
    if "other" in statuses:
        return "other"
    if not statuses or all(s == "skipped" for s in statuses):
        return "skipped"
    return "passed"


def is_failing(status: str) -> bool:
    return status in FAILING
