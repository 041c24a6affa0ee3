"""Go's renderings and scalar parsers, for messages that must read exactly as AICR's Go code prints them.

One home for every family: ``%v`` of a string slice (:func:`go_list`; AICR's own ``[a, b]`` is
:func:`format_names`) and of a ``map[string]string`` (:func:`go_map`), ``%t`` (:func:`go_bool`),
``%v`` of a float64 (:func:`format_go_float`), ``%T`` of a decoded YAML value (:func:`go_type_name`),
``encoding/json`` of decoded JSON (:func:`go_json`), ``strconv``'s ``ParseBool``, ``Atoi`` and
``Quote`` (:func:`parse_go_bool`, :func:`go_atoi`, :func:`go_quote`), and a value as ``log/slog``'s text
handler writes it (:func:`slog_text_value`).  Go durations live in :mod:`aicr_pytest.core.goduration`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "GO_TRUE",
    "format_go_float",
    "format_names",
    "go_atoi",
    "go_bool",
    "go_json",
    "go_json_float",
    "go_list",
    "go_map",
    "go_quote",
    "go_type_name",
    "parse_go_bool",
    "slog_text_value",
]

#: the strings ``strconv.ParseBool`` reads as true
GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})

_ATOI_RE: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MAX: Final = 2**63 - 1


def go_list(items: Iterable[str]) -> str:
    """Go's ``%v`` rendering of a ``[]string``: ``[a b c]``."""
    return "[" + " ".join(items) + "]"


def format_names(items: Iterable[str]) -> str:
    """AICR's ``formatNames`` helper of the deployment validators: ``[a, b]`` (not ``%v``'s ``[a b]``)."""
    return "[" + ", ".join(items) + "]"


def go_map(mapping: Mapping[str, str] | None) -> str:
    """Go's ``%v`` rendering of a ``map[string]string``: ``map[a:b c:d]`` (sorted keys; ``None`` is empty)."""
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted((mapping or {}).items())) + "]"


def go_bool(value: bool) -> str:
    """Go's ``%t``: ``true`` / ``false``."""
    return "true" if value else "false"


def parse_go_bool(text: str | None) -> bool:
    """``strconv.ParseBool``'s true values; anything else (errors included) is false.  No trimming:
    Go does not trim, so a caller that trims (``strings.TrimSpace`` first) does so itself."""
    return text in GO_TRUE


def go_atoi(text: str) -> int | None:
    """``strconv.Atoi``: optional sign, ASCII digits, int64 range; anything else → ``None``."""
    if not _ATOI_RE.fullmatch(text):
        return None
    n = int(text)
    return n if -_INT64_MAX - 1 <= n <= _INT64_MAX else None


def format_go_float(value: float) -> str:
    """Render a float64 exactly as Go's ``fmt.Sprintf("%v", f)``.

    That is ``strconv.FormatFloat(f, 'g', -1, 64)``: the shortest digits that round-trip, in exponent
    form when the decimal exponent is < -4 or >= 6 (``1e6`` → ``1e+06``, ``123456.0`` → ``123456``,
    ``1.0`` → ``1``, ``1.5e-7`` → ``1.5e-07``), plus ``+Inf``/``-Inf``/``NaN``.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0.0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    # repr() gives the shortest round-trip digits; dp = position of the decimal point.
    dp = len(digit_tuple) + exponent
    exp10 = dp - 1
    neg = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return f"{neg}{digits}{'0' * (dp - len(digits))}"
    return f"{neg}{digits[:dp]}.{digits[dp:]}"


def go_type_name(value: object) -> str:
    """Go's ``%T`` for a value decoded by yaml.v3 into ``interface{}``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return type(value).__name__


def go_json(value: Any) -> str:
    """Go ``encoding/json`` of decoded JSON: compact, map keys sorted, HTML characters escaped."""
    if isinstance(value, dict):
        inner = ",".join(f"{go_json(str(k))}:{go_json(value[k])}" for k in sorted(value, key=str))
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, bool):
        return go_bool(value)
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    text = json.dumps(str(value), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_json_float(value: float) -> str:
    """Go's JSON number for a float64: positional in [1e-6, 1e21), else ``1e-7`` / ``1.5e+21``."""
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        mantissa, _, exp = repr(value).partition("e")
        sign = "-" if exp.startswith("-") else "+"
        return f"{mantissa}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"
    return format(Decimal(repr(value)), "f")


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def _go_printable(ch: str) -> bool:
    """``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def go_quote(text: str) -> str:
    """``strconv.Quote``: a double-quoted Go literal; ``\\``, ``\"`` and control or unprintable
    characters escaped (``\\n``, ``\\x01``, ``\\u00a0``), printable ones kept."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif _go_printable(ch):
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _slog_needs_quoting(text: str) -> bool:
    """``log/slog``'s ``needsQuoting``: empty, a space, ``=``, ``"``, a control character, or a
    non-ASCII space or unprintable character (a lone backslash does not)."""
    if not text:
        return True
    for ch in text:
        if ch < "\x80":
            if ch != "\\" and (ch in ' ="' or ord(ch) < 0x20):
                return True
        elif ch.isspace() or not _go_printable(ch):
            return True
    return False


def slog_text_value(text: str) -> str:
    """A string value as ``log/slog``'s text handler writes it: bare, or :func:`go_quote`\\ d when it
    needs quoting (``reason="no GPU nodes"``, ``name=gpu-operator``)."""
    return go_quote(text) if _slog_needs_quoting(text) else text
