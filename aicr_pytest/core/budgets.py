"""Per-check time budgets: the catalog's ``timeout_s``, overridable per check by the data tree.

A ``--data`` directory's ``validators/catalog.yaml`` (AICR's ``ValidatorCatalog``: entries merged by
``name`` over the embedded data, :mod:`aicr_pytest.core.datatree`) changes a check's budget with its
entry's ``timeout``, a Go duration (``2m``, ``90s``, ``1m30s``)::

    validators:
      - name: gpu-operator-version
        timeout: 1m

As in AICR, ``timeout: 0`` means the 5-minute default.  An entry that names no check of the catalog
changes nothing (aicr-pytest runs only the checks it implements); a ``timeout`` that is not a Go
duration, or is negative, is a usage error before any check runs.  :data:`MSG_EXCEEDED` is the one
line a check that runs past its budget ends ``other`` with (the wording of AICR's orchestrator when a
validator Job outlives its catalog timeout).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.core import catalog
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.goduration import format_go_duration, parse_go_duration

if TYPE_CHECKING:
    from aicr_pytest.core.datatree import DataTree

#: AICR: a catalog entry whose timeout is zero gets the 5-minute default
DEFAULT_TIMEOUT_S: Final = 300.0
MSG_BAD_TIMEOUT: Final = (
    'validators/catalog.yaml: validator "{name}": timeout {value} is not a Go duration (such as 2m or 90s)'
)
MSG_NEGATIVE_TIMEOUT: Final = 'validators/catalog.yaml: validator "{name}": timeout {value} is negative'
#: what a check past its budget reports (CTRF ``other``)
MSG_EXCEEDED: Final = "timeout: validator did not complete within {budget}"


def _seconds(name: str, value: Any) -> float:
    shown = repr(value) if not isinstance(value, str) else f'"{value}"'
    if not isinstance(value, str):
        raise UsageError(MSG_BAD_TIMEOUT.format(name=name, value=shown))
    try:
        seconds = parse_go_duration(value)
    except ValueError:
        raise UsageError(MSG_BAD_TIMEOUT.format(name=name, value=shown)) from None
    if seconds < 0:
        raise UsageError(MSG_NEGATIVE_TIMEOUT.format(name=name, value=shown))
    return seconds or DEFAULT_TIMEOUT_S


def overlay_budgets(doc: Mapping[str, Any] | None) -> dict[str, float]:
    """``{check: seconds}`` for the entries of a merged ``validators/catalog.yaml`` that name a
    check of the catalog and set ``timeout`` (raises :class:`UsageError`)."""
    found: dict[str, float] = {}
    for entry in (doc or {}).get("validators") or ():
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        if not isinstance(name, str) or name not in catalog.BY_NAME or entry.get("timeout") is None:
            continue
        found[name] = _seconds(name, entry["timeout"])
    return found


def check_budgets(data: DataTree) -> dict[str, float]:
    """Every check's budget in seconds: the catalog's, with the data tree's overrides."""
    from aicr_pytest.core.datatree import CATALOG_PATH

    budgets = {name: float(spec.timeout_s) for name, spec in catalog.BY_NAME.items()}
    budgets.update(overlay_budgets(data.load_merged(CATALOG_PATH, "validators")))
    return budgets


def exceeded_message(seconds: float) -> str:
    """:data:`MSG_EXCEEDED` for a budget of ``seconds`` (``2m0s``, ``1s``)."""
    return MSG_EXCEEDED.format(budget=format_go_duration(seconds))


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MSG_BAD_TIMEOUT",
    "MSG_EXCEEDED",
    "MSG_NEGATIVE_TIMEOUT",
    "check_budgets",
    "exceeded_message",
    "overlay_budgets",
]
