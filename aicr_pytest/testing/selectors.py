"""Label- and field-selector parsing with Kubernetes semantics.

Label selectors follow https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/
(``=``, ``==``, ``!=``, ``in``, ``notin``, ``key`` (exists), ``!key`` (does not exist), plus
``>``/``<`` on integer values). As in Kubernetes, ``key!=v`` and ``key notin (...)`` also match
objects that do not carry the label at all.

Field selectors follow
https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/ (``=``,
``==``, ``!=``, comma = AND); the supported field labels are per resource, anything else is a
400 ``field label not supported``, like the real API server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "SelectorError",
    "field_value",
    "label_selector_from_match",
    "parse_field_selector",
    "parse_label_selector",
]


class SelectorError(ValueError):
    """A selector could not be parsed (the server answers 400 BadRequest)."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if self.op in ("gt", "lt"):
            if not present:
                return False
            try:
                have = int(labels[self.key])
            except ValueError:
                return False
            want = int(self.values[0])
            return have > want if self.op == "gt" else have < want
        raise AssertionError(self.op)


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        lab = labels or {}
        return all(r.matches(lab) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key: str, raw: str) -> str:
    if not key or not _KEY_RE.match(key):
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r} in {raw!r}")
    return key


def _check_value(value: str, raw: str) -> str:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value {value!r} in {raw!r}")
    return value


_SET_RE = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\((.*)\)\s*$")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query parameter."""
    if text is None or not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if not part:
            raise SelectorError(f"found '', expected: identifier in {text!r}")
        m = _SET_RE.match(part)
        if m:
            key, op, inner = m.group(1), m.group(2), m.group(3)
            values = tuple(_check_value(v.strip(), part) for v in inner.split(",") if v.strip() != "")
            if not values and op == "in":
                raise SelectorError(f"unable to parse requirement: {part!r}: values must be non-empty")
            reqs.append(Requirement(_check_key(key, part), op, values))
            continue
        if part.startswith("!"):
            reqs.append(Requirement(_check_key(part[1:].strip(), part), "!"))
            continue
        for sym, op in (("!=", "!="), ("==", "="), ("=", "="), (">", "gt"), ("<", "lt")):
            if sym in part:
                key, _, value = part.partition(sym)
                value = value.strip()
                if op in ("gt", "lt"):
                    try:
                        int(value)
                    except ValueError as exc:
                        raise SelectorError(
                            f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be "
                            f"an integer: {part!r}"
                        ) from exc
                else:
                    _check_value(value, part)
                reqs.append(Requirement(_check_key(key.strip(), part), op, (value,)))
                break
        else:
            if " " in part or "(" in part or ")" in part:
                raise SelectorError(f"unable to parse requirement: {part!r}")
            reqs.append(Requirement(_check_key(part, part), "exists"))
    return LabelSelector(tuple(reqs))


def label_selector_from_match(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` (``matchLabels``/``matchExpressions``) to a matcher."""
    if not selector:
        return LabelSelector()
    reqs = [Requirement(k, "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in selector.get("matchExpressions") or []:
        reqs.append(Requirement(expr["key"], ops[expr["operator"]], tuple(expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


# --- field selectors -----------------------------------------------------------------------------


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field of ``obj`` ("" when absent), as field selectors compare it."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, (dict, list)):
        return ""
    return str(cur)


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...] = ()  # (field, equal?, value)

    def matches(
        self, obj: Mapping[str, Any], getter: Callable[[Mapping[str, Any], str], str] = field_value
    ) -> bool:
        return all((getter(obj, field) == value) == equal for field, equal, value in self.terms)

    @property
    def empty(self) -> bool:
        return not self.terms

    def fields(self) -> set[str]:
        return {t[0] for t in self.terms}

    def exact(self, field: str) -> str | None:
        """The value the selector requires ``field`` to equal, if any (used to narrow scans)."""
        for f, equal, value in self.terms:
            if f == field and equal:
                return value
        return None


def parse_field_selector(text: str | None, supported: frozenset[str] | set[str]) -> FieldSelector:
    """Parse a ``fieldSelector``; fields outside ``supported`` are rejected like Kubernetes does."""
    if text is None or not text.strip():
        return FieldSelector()
    terms: list[tuple[str, bool, str]] = []
    for raw in text.split(","):
        part = raw.strip()
        for sym, is_equal in (("!=", False), ("==", True), ("=", True)):
            if sym in part:
                equal = is_equal
                field, _, value = part.partition(sym)
                field = field.strip()
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        if field not in supported:
            raise SelectorError(f"field label not supported: {field}")
        terms.append((field, equal, value.strip()))
    return FieldSelector(tuple(terms))
