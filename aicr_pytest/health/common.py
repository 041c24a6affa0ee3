"""What the node-health modules share: the failure type and the one rule for a verdict.

A check collects one line per problem, split in two lists: *failures* (the cluster is wrong:
a node, a GPU, a count) and *inconclusive* lines (the check could not tell: missing data, a
runtime error).  :func:`conclude` turns them into the outcome: any failure fails the check (the
inconclusive lines ride along in the message), otherwise any inconclusive line makes it
inconclusive, otherwise it passes.  Every line is kept; the message is one line per problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aicr_pytest.core.errors import CheckFailed, Inconclusive

#: a list the cluster refused (inconclusive)
MSG_LIST_FAILED: Final = "could not list {what}: {err}"


class HealthCheckFailed(CheckFailed):
    """The cluster failed a node-health check; ``str()`` is the user-facing message."""

    def __init__(self, message: str, lines: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.lines = tuple(lines)


class HealthInconclusive(Inconclusive):
    """A node-health check could not decide; ``lines`` holds one entry per reason."""

    def __init__(self, message: str, lines: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.lines = tuple(lines) or (message,)


def conclude(failures: Sequence[str], inconclusive: Sequence[str], passed: str) -> str:
    """``passed`` when both lists are empty; otherwise raise (failures first).

    The message is the lines joined with newlines: failures, then the inconclusive lines
    prefixed ``inconclusive: `` when both kinds are present.
    """
    if failures:
        lines = [*failures, *(f"inconclusive: {line}" for line in inconclusive)]
        raise HealthCheckFailed("\n".join(lines), lines)
    if inconclusive:
        raise HealthInconclusive("\n".join(inconclusive), inconclusive)
    return passed


def plural(count: int, word: str) -> str:
    """``1 GPU``, ``2 GPUs`` (``word`` takes an ``s``)."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


__all__ = ["HealthCheckFailed", "HealthInconclusive", "conclude", "plural"]
