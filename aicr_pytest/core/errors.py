"""Exception types shared by every layer.

* :class:`UsageError` — the user gave us something we cannot work with (bad flag, malformed
  recipe, unknown check name, bad path).  Entry points print ``str(err)`` as one line and exit 2,
  never a traceback.
* :class:`Inconclusive` — a check could not reach a verdict (API unreachable, pod vanished,
  timeout waiting for a workload).  It maps to CTRF status ``other``, which is failing.
* :class:`CheckFailed` — the cluster failed the check (CTRF ``failed``); every check family's own
  failure subclasses it.
* :class:`CheckSkip` — the check does not apply here (CTRF ``skipped``).

:func:`first_line` is how an error from below is quoted inside one of our one-line messages.
"""

from __future__ import annotations


class UsageError(Exception):
    """Invalid input or request (AICR ``ErrCodeInvalidRequest``): exit code 2."""

    exit_code = 2


class Inconclusive(Exception):
    """The check could not decide: reported as CTRF ``other`` (failing)."""


class CheckFailed(AssertionError):
    """The cluster failed the check: CTRF ``failed``, ``str()`` the user-facing message.

    An ``AssertionError``, so pytest reports a failure (like ``assert``), not an error (``other``).
    """


class CheckSkip(Exception):
    """The check does not apply here; ``reason`` is the user-facing skip message.

    ``code`` is the skip's closed-set reason code for CTRF ``extra.skipReason`` (AICR's codes, see
    :mod:`aicr_pytest.core.ctrfextra`), given only where the condition is exactly what the code
    names; ``None`` records no code.
    """

    def __init__(self, reason: str, code: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


def first_line(exc: BaseException) -> str:
    """The first line of ``str(exc)``, or the exception's type name when it has no text."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
