"""JSON objects as the store keeps them: ``Obj``, deep copies, watch history entries, per-resource tables."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, TypeVar, cast

Obj = dict[str, Any]
_T = TypeVar("_T")
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

_UUID_V4 = (0x4 << 76) | (0x8 << 60)
_UUID_MASK = ~((0xF << 76) | (0xC << 60)) & ((1 << 128) - 1)
_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def clone(value: _T) -> _T:
    """Deep copy of a JSON value (faster than ``copy.deepcopy`` for plain dicts/lists)."""
    return cast(_T, _clone(value))


@dataclass(slots=True)
class WatchEvent:
    """One entry of the store's change history (what ``watch`` streams)."""

    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    storage_key: tuple[str, str]  # (group, plural)
    namespace: str
    obj: Obj
    old: Obj | None
    at: float  # clock time of the change


class _Table:
    """Objects of one resource, with keys kept sorted lazily (bulk loads sort once)."""

    __slots__ = ("keys", "objects", "sorted")

    def __init__(self) -> None:
        self.objects: dict[Key, Obj] = {}
        self.keys: list[Key] = []
        self.sorted = True

    def put(self, key: Key, obj: Obj) -> None:
        if key not in self.objects:
            if self.sorted and self.keys and key < self.keys[-1]:
                self.sorted = False
            self.keys.append(key)
        self.objects[key] = obj

    def remove(self, key: Key) -> None:
        if self.objects.pop(key, None) is None:
            return
        self.ensure_sorted()
        idx = bisect.bisect_left(self.keys, key)
        del self.keys[idx]

    def ensure_sorted(self) -> None:
        if not self.sorted:
            self.keys.sort()
            self.sorted = True

    def namespace_range(self, namespace: str) -> tuple[int, int]:
        self.ensure_sorted()
        lo = bisect.bisect_left(self.keys, (namespace, ""))
        hi = bisect.bisect_left(self.keys, (namespace + "\x00", ""))
        return lo, hi


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _owner_uids(obj: Obj | None) -> set[str]:
    if not obj:
        return set()
    return {
        str(r.get("uid")) for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("uid")
    }


def _without(obj: Obj, *top: str) -> Obj:
    return {k: v for k, v in obj.items() if k not in top}


def _comparable(obj: Obj) -> Obj:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out
