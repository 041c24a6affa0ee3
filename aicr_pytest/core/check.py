"""The ``aicr_check`` fixture's object, ``aicr_pytest.CheckContext``: what a check function knows
about itself and how it reports.

Checks print evidence with :meth:`CheckContext.emit`; those lines become the CTRF ``stdout`` of the
check (last 1000 kept, 512 bytes each), and lines that start with ``RESULT: `` are echoed to the
terminal summary.  ``extra`` ends up under the CTRF test's ``extra`` object.

Structured records (:mod:`aicr_pytest.core.records`): :meth:`CheckContext.measure` (a measured value
against its constraint), :meth:`CheckContext.fact` (a short labelled value) and
:meth:`CheckContext.figure` (an SVG for the HTML report, kept out of CTRF).

It imports no pytest: :meth:`CheckContext.fail` and :meth:`CheckContext.skip` raise the package's own
:class:`~aicr_pytest.core.errors.CheckFailed` and :class:`~aicr_pytest.core.errors.CheckSkip`, which
:mod:`aicr_pytest.plugin.outcomes` maps to pytest's outcomes (the one place that does).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, NoReturn

from aicr_pytest.core import records
from aicr_pytest.core.errors import CheckFailed, CheckSkip
from aicr_pytest.core.recipe import Constraint
from aicr_pytest.core.settings import Placement, Toleration

log = logging.getLogger("aicr_pytest.check")


@dataclass
class CheckContext:
    name: str
    phase: str
    #: the check's time budget in seconds (the catalog's, or a ``--data`` overlay's); past it the
    #: check ends ``other`` (:mod:`aicr_pytest.plugin.budget`)
    timeout_s: float
    constraints: list[Constraint]
    #: the run's placement (``--node-selector``, ``--toleration``, ...) for inner workloads
    placement: Placement = field(default_factory=Placement)
    lines: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    figures: list[dict[str, str]] = field(default_factory=list)

    @property
    def node_selector(self) -> dict[str, str] | None:
        """``--node-selector`` (``None``: not given)."""
        return self.placement.node_selector

    @property
    def tolerations(self) -> tuple[Toleration, ...] | None:
        """``--toleration`` (``None``: not given)."""
        return self.placement.tolerations

    def emit(self, line: str) -> None:
        """Record one stdout line of evidence (multi-line strings are split)."""
        for part in str(line).splitlines() or [""]:
            self.lines.append(part)
            log.info("%s: %s", self.name, part)

    report = emit

    def measure(self, measurement: records.Measurement) -> None:
        """Record a measured value against its constraint (CTRF ``extra["aicr.measurements"]``)."""
        self.extra.setdefault(records.MEASUREMENTS_KEY, []).append(measurement.to_json())

    def fact(self, name: str, value: object) -> None:
        """Record a short labelled value, e.g. the chosen node (CTRF ``extra["aicr.facts"]``)."""
        self.extra.setdefault(records.FACTS_KEY, {})[str(name)] = str(value)

    def figure(self, title: str, svg: str) -> None:
        """Attach an SVG figure to the HTML report (``--html``); CTRF does not carry it."""
        self.figures.append(records.Figure(title=title, svg=svg).to_json())

    def constraint(self, name: str | None = None) -> Constraint | None:
        """The phase constraint called ``name`` (default: the one named like this check)."""
        wanted = name or self.name
        for c in self.constraints:
            if c.name == wanted:
                return c
        return None

    def fail(self, message: str) -> NoReturn:
        """Fail the check (CTRF ``failed``) with ``message``: raises :class:`CheckFailed`."""
        __tracebackhide__ = True  # a traceback ends at the caller
        raise CheckFailed(message)

    def skip(self, reason: str) -> NoReturn:
        """Skip the check (CTRF ``skipped``) with ``reason`` as the message: raises :class:`CheckSkip`."""
        raise CheckSkip(reason)
