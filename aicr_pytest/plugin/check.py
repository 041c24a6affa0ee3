"""The ``check`` fixture's object: what a check function knows about itself and how it reports.

Checks print evidence with :meth:`CheckContext.emit`; those lines become the CTRF ``stdout`` of the
check (last 1000 kept, 512 bytes each), and lines that start with ``RESULT: `` are echoed to the
terminal summary.  ``extra`` ends up under the CTRF test's ``extra`` object.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pytest

from aicr_pytest.core.recipe import Constraint
from aicr_pytest.core.settings import Toleration

log = logging.getLogger("aicr_pytest.check")


@dataclass
class CheckContext:
    name: str
    phase: str
    timeout_s: int
    constraints: list[Constraint]
    node_selector: dict[str, str] | None = None
    tolerations: tuple[Toleration, ...] | None = None
    lines: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def emit(self, line: str) -> None:
        """Record one stdout line of evidence (multi-line strings are split)."""
        for part in str(line).splitlines() or [""]:
            self.lines.append(part)
            log.info("%s: %s", self.name, part)

    report = emit

    def constraint(self, name: str | None = None) -> Constraint | None:
        """The phase constraint called ``name`` (default: the one named like this check)."""
        wanted = name or self.name
        for c in self.constraints:
            if c.name == wanted:
                return c
        return None

    def fail(self, message: str) -> NoReturn:
        """Fail the check (CTRF ``failed``) with ``message``."""
        pytest.fail(message, pytrace=False)

    def skip(self, reason: str) -> NoReturn:
        """Skip the check (CTRF ``skipped``) with ``reason`` as the message."""
        pytest.skip(reason)
