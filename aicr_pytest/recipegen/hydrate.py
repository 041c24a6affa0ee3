"""A ``RecipeMetadata`` overlay given as ``--recipe``, hydrated as AICR hydrates it.

Today's AICR (``LoadFromFile`` in its recipe package) accepts an overlay where a recipe is expected:
it reads the overlay's ``spec.criteria`` and builds the recipe for those criteria through its recipe
builder, from the data tree in use (the overlay file's other content is not read: the overlay the
criteria select is the data tree's own).  :func:`hydrate_overlay` does the same through
:func:`aicr_pytest.recipegen.build.generate`, over the run's data tree (embedded, plus ``--data``).
An overlay without criteria is refused as AICR refuses it, naming ``aicr-pytest recipe``.
"""

from __future__ import annotations

from typing import Any, Final

from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError

MSG_NO_CRITERIA: Final = (
    "overlay {source} has no criteria; only leaf overlays (with spec.criteria) can be used directly — "
    'run "aicr-pytest recipe" with explicit criteria instead'
)
MSG_BAD_CRITERIA: Final = "overlay {source}: spec.criteria: {problem}"
MSG_HYDRATED: Final = (
    "recipe {source} is a RecipeMetadata overlay; hydrated through the recipe builder for its "
    "criteria ({criteria}): overlays {overlays}"
)


def _as_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return value if isinstance(value, dict | list) else str(value)


def hydrate_overlay(doc: dict[str, Any], source: str, data: DataTree) -> tuple[dict[str, Any], str]:
    """``(RecipeResult document, the one line saying so)`` for the overlay ``doc``; a
    :class:`UsageError` when it has no criteria or they are not valid criteria."""
    from aicr_pytest.recipegen import criteria as crit
    from aicr_pytest.recipegen.build import generate
    from aicr_pytest.recipegen.spec import DecodeError, decode_criteria
    from aicr_pytest.recipegen.store import load_store

    spec = doc.get("spec")
    raw = spec.get("criteria") if isinstance(spec, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise UsageError(MSG_NO_CRITERIA.format(source=source))
    store = load_store(data)
    text = {k: _as_text(v) for k, v in raw.items()}  # the decoder reads scalars as written
    try:
        given = decode_criteria(text, "spec.criteria")
        query = crit.build(store.registry, **{f: getattr(given, f) for f in crit.FIELDS}, nodes=given.nodes)
    except (DecodeError, UsageError) as exc:
        raise UsageError(MSG_BAD_CRITERIA.format(source=source, problem=exc)) from None
    result = generate(store, data, query)
    line = MSG_HYDRATED.format(source=source, criteria=query.describe(), overlays=", ".join(result.applied))
    return result.document, line


__all__ = ["MSG_BAD_CRITERIA", "MSG_HYDRATED", "MSG_NO_CRITERIA", "hydrate_overlay"]
