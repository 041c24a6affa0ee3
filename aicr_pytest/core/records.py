"""Structured records a check attaches to its result, for every report to read the same way.

* :class:`Measurement` — a measured value against its constraint, kept in CTRF
  ``extra["aicr.measurements"]`` (a list, in the order the check measured).
* facts — short labelled values (the chosen node, the wiring mode), CTRF ``extra["aicr.facts"]``
  (an object of strings, in the order recorded).
* :class:`HealthRow` — one row of a per-node, per-GPU health table (the node-health checks), CTRF
  ``extra["aicr.healthTable"]`` (a list of rows, node by node); the terminal shows the rows that
  did not pass under the check's failure line, the HTML page the whole table.
* :class:`Figure` — an inline SVG for the HTML report.  Figures are *not* part of CTRF: CTRF is a
  schema-bound data format that other tools parse and that the evidence bundle publishes, and a
  figure is many kilobytes of markup that only restates data CTRF already carries (e.g.
  ``aicr.ncclSweep``).  They travel to the xdist controller in ``report.user_properties``.

No pytest, no kubernetes: the check families build these records, the plugin carries them and the
reports read them.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

MEASUREMENTS_KEY = "aicr.measurements"
FACTS_KEY = "aicr.facts"
FIGURES_PROPERTY = "aicr.figures"
HEALTH_TABLE_KEY = "aicr.healthTable"

#: the largest figure (SVG text, bytes) a report inlines
MAX_FIGURE_BYTES = 512 * 1024


class Measurement(BaseModel):
    """A measured value and the constraint it was judged against.

    ``effective_threshold`` is the bound actually compared, after the tolerance (and any scaling):
    ``>= 300`` with 10 % tolerance passes at ``>= 270``.  ``passed`` is ``None`` when the value was
    measured but not judged (no constraint).  A value that is not a finite number is stored as
    ``None`` and can never pass (fail closed).
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    name: str = Field(min_length=1)
    value: float | None
    unit: str = ""
    constraint: str | None = None
    tolerance: float | None = None
    effective_threshold: float | None = Field(
        default=None,
        validation_alias=AliasChoices("effectiveThreshold", "effective_threshold"),
        serialization_alias="effectiveThreshold",
    )
    passed: bool | None = None

    @field_validator("value", "tolerance", "effective_threshold", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("a number, not a boolean")
        if isinstance(value, int | float) and not math.isfinite(float(value)):
            return None
        return value

    @model_validator(mode="after")
    def _fail_closed(self) -> Measurement:
        if self.value is None and self.passed:
            object.__setattr__(self, "passed", False)
        return self

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


#: a health-table row's result: DCGM's verdicts, plus ``other`` for what could not be decided
HealthResult = Literal["pass", "fail", "warn", "skip", "other"]


class HealthRow(BaseModel):
    """One node (``gpu`` empty: the whole node) or GPU, in one test, and how it did."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    node: str = Field(min_length=1)
    gpu: str = ""
    #: the GPU's serial or UUID, where the source reports it
    serial: str = ""
    test: str = Field(min_length=1)
    result: HealthResult
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.result in ("pass", "skip")

    def to_json(self) -> dict[str, str]:
        return self.model_dump()


def health_rows(raw: Any) -> list[HealthRow]:
    """The rows of a CTRF ``aicr.healthTable`` as read back by a report; an unreadable row becomes
    an ``other`` row saying so (never silently dropped)."""
    rows: list[HealthRow] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            rows.append(HealthRow.model_validate(item))
        except ValueError:
            rows.append(HealthRow(node="?", test="?", result="other", detail="unreadable health-table row"))
    return rows


class Figure(BaseModel):
    """An SVG figure (title + SVG text) for the HTML report."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    title: str = Field(min_length=1)
    svg: str

    @field_validator("svg")
    @classmethod
    def _size(cls, svg: str) -> str:
        if len(svg.encode("utf-8")) > MAX_FIGURE_BYTES:
            raise ValueError(f"figure larger than {MAX_FIGURE_BYTES} bytes")
        return svg

    def to_json(self) -> dict[str, str]:
        return {"title": self.title, "svg": self.svg}


__all__ = [
    "FACTS_KEY",
    "FIGURES_PROPERTY",
    "HEALTH_TABLE_KEY",
    "MAX_FIGURE_BYTES",
    "MEASUREMENTS_KEY",
    "Figure",
    "HealthResult",
    "HealthRow",
    "Measurement",
    "health_rows",
]
