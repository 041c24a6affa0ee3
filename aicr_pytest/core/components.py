"""Recipe component refs: enabled or not, as AICR decides it (``recipeHasComponent``).

A ref may be a plain dict (recipe YAML keys: ``overrides``, ``expectedResources``...) or a
:class:`aicr_pytest.core.recipe.ComponentRef` model; :func:`ref_dict` turns either into a dict with
the recipe's camelCase keys.  A ref is enabled unless ``overrides.enabled`` is the boolean
``false``; a non-boolean value warns and counts as enabled (AICR's ``IsEnabled``).

Shared by every family (deployment, conformance, ...), which must not import each other.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

log = logging.getLogger("aicr_pytest.components")


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


def enabled_ref(refs: Iterable[Mapping[str, Any] | Any], name: str) -> dict[str, Any] | None:
    """The first enabled ref called ``name`` (as a dict), or ``None`` when absent or disabled."""
    return next((d for d in enabled_refs(refs) if d.get("name") == name), None)


def ref_namespace(ref: Mapping[str, Any] | None, default: str) -> str:
    """The ref's trimmed ``namespace``, or ``default`` when the ref is absent or has none."""
    if ref is None:
        return default
    return str(ref.get("namespace") or "").strip() or default


__all__ = [
    "enabled_ref",
    "enabled_refs",
    "is_enabled",
    "ref_dict",
    "ref_namespace",
]
