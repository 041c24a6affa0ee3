"""Structured records a check attaches to its result, for every report to read the same way.

* :class:`Measurement` — a measured value against its constraint, kept in CTRF
  ``extra["aicr.measurements"]`` (a list, in the order the check measured).
* facts — short labelled values (the chosen node, the wiring mode), CTRF ``extra["aicr.facts"]``
  (an object of strings, in the order recorded).
* :class:`Figure` — an inline SVG for the HTML report.  Figures are *not* part of CTRF: CTRF is a
  schema-bound data format that other tools parse and that the evidence bundle publishes, and a
  figure is many kilobytes of markup that only restates data CTRF already carries (e.g.
  ``aicr.ncclSweep``).  They travel to the xdist controller in ``report.user_properties``.

No pytest, no kubernetes: the check families build these records, the plugin carries them and the
reports read them.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

MEASUREMENTS_KEY = "aicr.measurements"
FACTS_KEY = "aicr.facts"
FIGURES_PROPERTY = "aicr.figures"

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
    "MAX_FIGURE_BYTES",
    "MEASUREMENTS_KEY",
    "Figure",
    "Measurement",
]
