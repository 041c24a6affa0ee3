"""Small readers of API objects: ``metadata``/``spec``/``status`` as maps, integer fields, images.

Absent or malformed parts read as empty (or 0), so the checks built on them fail closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_int", "first_image", "meta", "spec", "status"]


def as_int(value: object) -> int:
    """An integer field; absent or malformed reads as 0 (counts then fail closed)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return 0


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def first_image(obj: Mapping[str, Any]) -> str:
    """The first container image of a workload's pod template (``""`` when there is none)."""
    containers = spec(spec(obj).get("template") or {}).get("containers") or []
    if containers and isinstance(containers[0], Mapping):
        return str(containers[0].get("image") or "")
    return ""
