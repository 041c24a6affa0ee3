"""Query criteria: parsing (aliases, values registered by overlays), matching and specificity.

A query has six dimensions — service, accelerator, intent, os, platform and nodes.  An unset
dimension is ``any`` (nodes ``0``).  Input values are trimmed and lower-cased; the static values and
aliases are AICR's, and a value outside the static list is accepted only when some loaded
overlay declares it in its ``spec.criteria`` (that is how ``--data`` adds private services).

Matching is asymmetric: an overlay value that is empty or ``any`` matches every query
value; a specific overlay value matches only the identical query value (case-sensitive, overlay
values are not normalized).  Nodes: query ``0`` matches only overlay ``0``; overlay ``0`` matches any.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from aicr_pytest.core.errors import UsageError
from aicr_pytest.recipegen.spec import OverlayCriteria

ANY: Final = "any"
Field = Literal["service", "accelerator", "intent", "os", "platform"]
FIELDS: Final[tuple[Field, ...]] = ("service", "accelerator", "intent", "os", "platform")

#: AICR's static values per dimension (``GetCriteria*Types``), sorted. ``rke2``, ``k0s``, ``generic`` and
#: ``vr200`` are AICR main's (``CriteriaServiceRKE2``/``K0s``/``Generic``, ``CriteriaAcceleratorVR200``
#: in its validators and recipe tests; the leaves rke2/vr200, k0s/h200, generic/gb300).
STATIC_VALUES: Final[Mapping[Field, tuple[str, ...]]] = {
    "service": ("aks", "bcm", "eks", "generic", "gke", "k0s", "kind", "lke", "metal3", "ocp", "oke", "rke2"),
    "accelerator": (
        "a100",
        "b200",
        "gb200",
        "gb300",
        "h100",
        "h200",
        "l40",
        "l40s",
        "rtx-pro-6000",
        "vr200",
    ),
    "intent": ("inference", "training"),
    "os": ("amazonlinux", "cos", "ol", "rhel", "talos", "ubuntu"),
    "platform": ("dynamo", "kubeflow", "nim", "runai", "slurm"),
}
#: Input aliases (after trimming and lower-casing).
ALIASES: Final[Mapping[Field, Mapping[str, str]]] = {
    "service": {"": ANY, ANY: ANY, "self-managed": ANY, "self": ANY, "vanilla": ANY, "openshift": "ocp"},
    "accelerator": {"": ANY, ANY: ANY},
    "intent": {"": ANY, ANY: ANY},
    "os": {"": ANY, ANY: ANY, "al2": "amazonlinux", "al2023": "amazonlinux"},
    "platform": {"": ANY, ANY: ANY},
}

# Messages quoted from AICR (the list of valid values is ours: AICR names only the bad value).
MSG_INVALID_VALUE = "invalid {field} type: {value} (valid: {valid})"
MSG_INVALID_NODES = "invalid nodes count: {nodes} (must be >= 0)"
#: AICR reads the count into a Go int (64 bits): a larger one is refused, never written
MSG_NODES_OUT_OF_RANGE = "invalid nodes count: {nodes} (out of range for a 64-bit integer)"
_INT64_MAX = 2**63 - 1


def normalize(value: str) -> str:
    return value.strip().lower()


class CriteriaRegistry:
    """Values accepted on input: the static list plus every value an overlay declares."""

    def __init__(self) -> None:
        self._registered: dict[Field, set[str]] = {f: set() for f in FIELDS}

    def register(self, criteria: OverlayCriteria | None) -> None:
        if criteria is None:
            return
        for f in FIELDS:
            value = normalize(getattr(criteria, f))
            if value and value != ANY:
                self._registered[f].add(value)

    def registered(self, field: Field) -> frozenset[str]:
        return frozenset(self._registered[field])

    def values(self, field: Field) -> list[str]:
        """Every valid value (static and registered), sorted."""
        return sorted(set(STATIC_VALUES[field]) | self._registered[field])

    def parse(self, field: Field, value: str) -> str:
        """Canonical value for ``value`` (``any`` for empty), or :class:`UsageError`."""
        key = normalize(value)
        alias = ALIASES[field].get(key)
        if alias is not None:
            return alias
        if key in STATIC_VALUES[field] or key in self._registered[field]:
            return key
        valid = ", ".join([ANY, *self.values(field)])
        raise UsageError(MSG_INVALID_VALUE.format(field=field, value=value, valid=valid))


@dataclass(frozen=True)
class Criteria:
    """A parsed query.  Generated recipes carry it verbatim, ``any`` included."""

    service: str = ANY
    accelerator: str = ANY
    intent: str = ANY
    os: str = ANY
    platform: str = ANY
    nodes: int = 0

    def specificity(self) -> int:
        return _specificity(self)

    def with_values(self, **values: Any) -> Criteria:
        return replace(self, **values)

    def to_dict(self) -> dict[str, Any]:
        """The ``criteria`` block of a RecipeResult (``nodes`` only when set)."""
        out: dict[str, Any] = {f: getattr(self, f) for f in FIELDS if getattr(self, f)}
        if self.nodes:
            out["nodes"] = self.nodes
        return out

    def describe(self) -> str:
        parts = [f"{f}={getattr(self, f)}" for f in FIELDS if getattr(self, f) not in ("", ANY)]
        if self.nodes:
            parts.append(f"nodes={self.nodes}")
        return ", ".join(parts) or "any"


def _is_any(value: str) -> bool:
    return value in ("", ANY)


def _specificity(c: Criteria | OverlayCriteria) -> int:
    score = sum(0 if _is_any(getattr(c, f)) else 1 for f in FIELDS)
    return score + (1 if c.nodes else 0)


def specificity(c: OverlayCriteria) -> int:
    """Non-any dimensions (+1 when nodes is set): the leaf application order key."""
    return _specificity(c)


def field_matches(overlay_value: str, query_value: str) -> bool:
    if _is_any(overlay_value):
        return True
    if _is_any(query_value):
        return False
    return overlay_value == query_value


def matches(overlay: OverlayCriteria, query: Criteria) -> bool:
    """Does an overlay's ``spec.criteria`` select this query?"""
    if not all(field_matches(getattr(overlay, f), getattr(query, f)) for f in FIELDS):
        return False
    if query.nodes == 0 and overlay.nodes != 0:
        return False
    return not (query.nodes != 0 and overlay.nodes != 0 and overlay.nodes != query.nodes)


def check_nodes(nodes: int) -> int:
    if nodes < 0:
        raise UsageError(MSG_INVALID_NODES.format(nodes=nodes))
    if nodes > _INT64_MAX:
        raise UsageError(MSG_NODES_OUT_OF_RANGE.format(nodes=nodes))
    return nodes


def build(registry: CriteriaRegistry, base: Criteria | None = None, **values: str | int | None) -> Criteria:
    """``base`` (default: all any) with the given dimensions parsed and replaced (``None`` = keep)."""
    result = base or Criteria()
    changes: dict[str, Any] = {}
    for f in FIELDS:
        raw = values.get(f)
        if raw is not None and raw != "":
            changes[f] = registry.parse(f, str(raw))
    nodes = values.get("nodes")
    if nodes is not None and not isinstance(nodes, str) and check_nodes(int(nodes)) > 0:
        changes["nodes"] = int(nodes)  # like AICR, 0 leaves the value as it is
    return replace(result, **changes)


__all__ = [
    "ALIASES",
    "ANY",
    "FIELDS",
    "STATIC_VALUES",
    "Criteria",
    "CriteriaRegistry",
    "build",
    "check_nodes",
    "field_matches",
    "matches",
    "normalize",
    "specificity",
]
