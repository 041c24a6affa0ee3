"""The assertion-tree matcher of the health checks (kyverno-json semantics, the subset AICR's files use).

:func:`match_tree` compares an expected tree (literal values, nested maps and lists, ``(jmespath)``
keys) with an object and returns the mismatch reasons; an expression that cannot be compiled or
evaluated is an :class:`AssertionEngineError` (terminal: retrying cannot change it, #1261).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import jmespath
import jmespath.exceptions


class AssertionEngineError(Exception):
    """The assertion tree could not be evaluated (bad JMESPath, a function on null, ...).

    Terminal: retrying cannot change the outcome (#1261).
    """


def _render(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 200 else text[:197] + "..."


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


@functools.lru_cache(maxsize=512)
def _compile(expression: str) -> Any:
    return jmespath.compile(expression)


def _one_line(err: BaseException) -> str:
    return " ".join(part.strip() for part in str(err).splitlines() if part.strip())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar_equal(expected: Any, actual: Any) -> bool:
    """Equality with JSON typing: numbers compare by value (``3 == 3.0``), booleans are not
    numbers (``true != 1``), strings never equal numbers (``"3" != 3``)."""
    if _is_number(expected) and _is_number(actual):
        return bool(expected == actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if type(expected) is not type(actual) and not (expected is None or actual is None):
        return False
    return bool(expected == actual)


def _match(expected: Any, actual: Any, path: str, out: list[str]) -> None:
    if isinstance(expected, Mapping):
        if not expected:
            if actual is None:
                out.append(f"{path or '$'}: expected a non-null value, got null")
            return
        for key, child in expected.items():
            key_text = str(key)
            if len(key_text) >= 2 and key_text.startswith("(") and key_text.endswith(")"):
                child_path = _join(path, key_text)
                try:
                    projected = _compile(key_text[1:-1]).search(actual)
                except jmespath.exceptions.JMESPathError as err:
                    raise AssertionEngineError(f"{child_path}: {_one_line(err)}") from err
                _match(child, projected, child_path, out)
                continue
            child_path = _join(path, key_text)
            if actual is None:
                _match(child, None, child_path, out)
            elif isinstance(actual, Mapping):
                _match(child, actual.get(key_text), child_path, out)
            else:
                out.append(f"{path or '$'}: expected an object, got {_render(actual)}")
                return
        return
    if isinstance(expected, list):
        if not isinstance(actual, list):
            out.append(f"{path or '$'}: expected an array, got {_render(actual)}")
            return
        if len(actual) != len(expected):
            out.append(
                f"{path or '$'}: expected an array of length {len(expected)}, got length {len(actual)}"
            )
            return
        for i, (exp_item, act_item) in enumerate(zip(expected, actual, strict=True)):
            _match(exp_item, act_item, f"{path}[{i}]", out)
        return
    if not _scalar_equal(expected, actual):
        out.append(f"{path or '$'}: expected {_render(expected)}, got {_render(actual)}")


def match_tree(expected: Any, actual: Any) -> list[str]:
    """Compare ``actual`` with an assertion tree; return mismatch descriptions (empty = match).

    * maps are subset matches; a key wrapped in parentheses is a JMESPath expression evaluated
      against the current node, and its result is compared with the child value;
    * arrays must have the same length, then match element-wise;
    * scalars compare by value.

    Raises :class:`AssertionEngineError` when an expression cannot be compiled or evaluated.
    """
    out: list[str] = []
    _match(expected, actual, "", out)
    return out
