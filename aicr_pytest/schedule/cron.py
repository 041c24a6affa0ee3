"""The CronJob's schedule: a standard five-field cron expression, checked before anything is applied (pure).

Kubernetes (``robfig/cron``'s standard parser) takes ``minute hour day-of-month month day-of-week``,
each field ``*``, a value, a range ``a-b``, any of those with a step ``/n``, or a comma list of
them; months and weekdays may be spelled (``jan``, ``mon``); the macros ``@hourly`` … ``@yearly``
stand for a whole expression.  :func:`validate_cron` returns the expression or raises a one-line
:class:`~aicr_pytest.core.errors.UsageError` naming the field that is wrong.
"""

from __future__ import annotations

from typing import Final

from aicr_pytest.core.errors import UsageError

MACROS: Final = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
#: (name, low, high, names) per field, in order
FIELDS: Final = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    ("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)
MSG_FIELDS: Final = (
    "--cron {expr!r}: a cron expression has 5 fields (minute hour day-of-month month day-of-week), not {n}"
)
MSG_FIELD: Final = "--cron {expr!r}: {field} {part!r} is not valid ({why})"


def _value(text: str, low: int, high: int, names: tuple[str, ...]) -> int:
    lowered = text.lower()
    if lowered in names:
        return names.index(lowered) + (1 if low == 1 else 0)
    if not text.isdigit():
        raise ValueError(f"not a number{' or a name' if names else ''}")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{low}-{high}")
    return value


def _part(part: str, low: int, high: int, names: tuple[str, ...]) -> None:
    base, slash, step = part.partition("/")
    if slash and (not step.isdigit() or int(step) == 0):
        raise ValueError("the step must be a whole number above 0")
    if base == "*" or (base == "?" and not slash):
        return
    start, dash, end = base.partition("-")
    first = _value(start, low, high, names)
    if dash and _value(end, low, high, names) < first:
        raise ValueError("a range must not run backwards")


def validate_cron(expr: str) -> str:
    """``expr`` stripped, when it is a schedule a CronJob accepts; :class:`UsageError` otherwise."""
    text = " ".join(expr.split())
    if text.lower() in MACROS:
        return text
    parts = text.split(" ") if text else []
    if len(parts) != len(FIELDS):
        raise UsageError(MSG_FIELDS.format(expr=expr, n=len(parts)))
    for value, (name, low, high, names) in zip(parts, FIELDS, strict=True):
        for part in value.split(","):
            try:
                if not part:
                    raise ValueError("empty list item")
                _part(part, low, high, names)
            except ValueError as exc:
                raise UsageError(MSG_FIELD.format(expr=expr, field=name, part=part, why=exc)) from None
    return text


__all__ = ["FIELDS", "MACROS", "MSG_FIELD", "MSG_FIELDS", "validate_cron"]
