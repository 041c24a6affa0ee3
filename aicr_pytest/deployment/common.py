"""What the four deployment-phase checks share: the failure type, component refs, Go-style text.

Outcomes: a check function returns its pass message, raises :class:`CheckFailed` (an
``AssertionError``, so pytest reports ``failed``), :class:`~aicr_pytest.core.errors.CheckSkip`
(``skipped``) or :class:`~aicr_pytest.core.errors.Inconclusive` (``other``: the API could not answer).

Component refs may be plain dicts (recipe YAML keys: ``overrides``, ``expectedResources``,
``manifestFiles``, ``healthCheckAsserts``...) or :class:`aicr_pytest.core.recipe.ComponentRef` models;
:func:`enabled_refs` turns them into dicts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

log = logging.getLogger("aicr_pytest.deployment")

Emit = Callable[[str], None]


class CheckFailed(AssertionError):
    """The cluster failed the check; ``str()`` is the user-facing message."""


def ref_dict(ref: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A component ref as a dict with the recipe's (camelCase) keys."""
    if isinstance(ref, Mapping):
        return dict(ref)
    dump = getattr(ref, "model_dump", None)
    if callable(dump):
        data = dump(by_alias=True)
        if isinstance(data, dict):
            return data
    raise TypeError(f"not a component ref: {ref!r}")


def is_enabled(ref: Mapping[str, Any] | Any) -> bool:
    """Enabled unless ``overrides.enabled`` is the boolean ``false`` (a non-bool warns, counts as on)."""
    data = ref_dict(ref)
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, Mapping) or "enabled" not in overrides:
        return True
    value = overrides["enabled"]
    if not isinstance(value, bool):
        log.warning(
            "component %s: overrides.enabled is not a boolean (%r); treating as enabled",
            data.get("name"),
            value,
        )
        return True
    return value


def enabled_refs(refs: Iterable[Mapping[str, Any] | Any]) -> list[dict[str, Any]]:
    """The enabled refs, as dicts, in recipe order."""
    return [d for d in (ref_dict(r) for r in refs) if is_enabled(d)]


def _go_list(items: Iterable[str]) -> str:
    """Go's ``%v`` rendering of a string slice: ``[a b c]``."""
    return "[" + " ".join(items) + "]"


def _describe_error(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__
