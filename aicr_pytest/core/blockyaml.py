"""A fast loader for the plain block-style YAML that ``aicr snapshot`` (Go yaml.v3) and PyYAML emit.

PyYAML, even with libyaml, reads about 1.5–2 MB/s because it composes and resolves every node in
Python; a large snapshot (tens of MB) would take many seconds.  Machine-written snapshots use a tiny
part of YAML: block mappings and sequences, one scalar per line, plain or quoted.  :func:`load`
parses exactly that subset line by line, and hands the whole text to :func:`aicr_pytest.core.yamlio.load`
as soon as it meets anything else (flow collections other than ``{}``/``[]``, block or multi-line
scalars, anchors, aliases, tags, comments after a value, directives, several documents, tabs…).
Scalars are typed with the same YAML 1.2 core-schema rules as :mod:`aicr_pytest.core.yamlio`, so the
result is always what ``yamlio.load`` returns (``tests/unit/test_snapshot.py`` checks this).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Final

from aicr_pytest.core import yamlio

__all__ = ["load", "try_load"]


class _Unsupported(Exception):
    """Outside the fast subset: use the full YAML loader."""


_INT_RE: Final = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT_RE: Final = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_BOOL: Final = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULL: Final = frozenset({"~", "null", "Null", "NULL"})
# plain scalars that are not strings although they do not start with a digit/sign/dot
_WORDS: Final[dict[str, Any]] = {**_BOOL, **dict.fromkeys(_NULL)}
_RESOLVE_FIRST: Final = frozenset("-+.0123456789")
# characters that may not start a plain scalar (or that start something we do not handle)
_BAD_START: Final = frozenset("[]{},#&*!|>'\"%@`?:-\t")
_JSON_ESCAPES: Final = re.compile(r'\\(?:["\\/bfnrt]|u(?![dD][89a-fA-F])[0-9a-fA-F]{4})')
_ASCII_SPECIAL: Final = re.compile("[\x00-\x09\x0b-\x1f\x7f]")


@functools.cache
def _special_chars() -> re.Pattern[str]:
    """What PyYAML rejects, or treats as a line break, outside ASCII: such input is left to it.

    Compiled on first non-ASCII input: the Unicode class costs ~10 ms to compile (start-up time)."""
    return re.compile(
        "[^\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
    )


def _resolve(text: str) -> Any:
    """Type a plain scalar like yamlio's YAML 1.2 core-schema resolvers."""
    c = text[0]
    if c in "-+.0123456789":
        if _INT_RE.fullmatch(text):
            if text.startswith("0o"):
                return int(text[2:], 8)
            if text.startswith("0x"):
                return int(text[2:], 16)
            return int(text, 10)
        if _FLOAT_RE.fullmatch(text):
            low = text.lower()
            if low.endswith((".inf", ".nan")):
                sign = -1.0 if low[0] == "-" else 1.0
                return sign * float("inf") if low.endswith("inf") else float("nan")
            return float(text)
        return text
    if c in "tTfF":
        b = _BOOL.get(text)
        return text if b is None else b
    if c in "~nN" and text in _NULL:
        return None
    return text


def _plain(text: str) -> Any:
    text = text.rstrip(" ")
    c = text[0]
    if c in _BAD_START:
        if text in ("{}", "[]"):
            return {} if text == "{}" else []
        if c == "-" and len(text) > 1 and text[1] != " ":
            pass  # "-1", "-foo" are plain
        else:
            raise _Unsupported
    if " #" in text or ": " in text or text.endswith(":") or "\t" in text:
        raise _Unsupported
    return _resolve(text)


def _quoted(text: str) -> str:
    text = text.rstrip(" ")
    q = text[0]
    if len(text) < 2 or text[-1] != q:
        raise _Unsupported
    inner = text[1:-1]
    if q == "'":
        if "'" in inner.replace("''", ""):
            raise _Unsupported
        return inner.replace("''", "'")
    if "\\" in inner:
        if "\\" in _JSON_ESCAPES.sub("", inner) or '"' in _JSON_ESCAPES.sub("", inner):
            raise _Unsupported
        value = json.loads(text)
        if not isinstance(value, str):  # pragma: no cover - defensive
            raise _Unsupported
        return value
    if '"' in inner:
        raise _Unsupported
    return inner


def _scalar(text: str) -> Any:
    if text[0] in "'\"":
        return _quoted(text)
    return _plain(text)


def _split_key(content: str) -> tuple[Any, str] | None:
    """``key: rest`` → (key, rest); ``key:`` → (key, ""); not a mapping entry → None."""
    c = content[0]
    if c in "'\"":
        q = content.find(c + ":", 1)
        if q == -1:
            return None
        after = content[q + 2 :]
        if after and after[0] != " ":
            raise _Unsupported
        key = _quoted(content[: q + 1])
        return key, after.lstrip(" ")
    idx = content.find(": ")
    if idx == -1:
        if content.endswith(":") and content != ":":
            raw_key = content[:-1]
            rest = ""
        else:
            return None
    else:
        raw_key = content[:idx]
        rest = content[idx + 2 :].lstrip(" ")
    if not raw_key or raw_key[0] in _BAD_START or " #" in raw_key or raw_key == "<<" or raw_key[-1] == " ":
        raise _Unsupported
    return _resolve(raw_key), rest


class _Parser:
    __slots__ = ("contents", "indents", "n")

    def __init__(self, text: str) -> None:
        lines = text.split("\n")
        contents = [line.lstrip(" ") for line in lines]
        indents = [len(a) - len(b) for a, b in zip(lines, contents, strict=True)]
        if any(not c or c[0] == "#" for c in contents):
            keep = [i for i, c in enumerate(contents) if c and c[0] != "#"]
            contents = [contents[i] for i in keep]
            indents = [indents[i] for i in keep]
        if contents and contents[0].startswith("%"):
            raise _Unsupported
        if contents and contents[0] == "---":
            contents.pop(0)
            indents.pop(0)
        for c in contents:
            if c.startswith(("---", "...")) and (len(c) == 3 or c[3] == " "):
                raise _Unsupported
        self.indents = indents
        self.contents = contents
        self.n = len(contents)

    def document(self) -> Any:
        if self.n == 0:
            return None
        if self.indents[0] != 0:
            raise _Unsupported
        value, i = self.node(0, 0)
        if i != self.n:
            raise _Unsupported
        return value

    def node(self, i: int, indent: int) -> tuple[Any, int]:
        content = self.contents[i]
        if content == "-" or content.startswith("- "):
            return self.sequence(i, indent)
        if _split_key(content) is None:
            # a lone scalar as a whole block node (only valid at the top of a document)
            if i + 1 < self.n and self.indents[i + 1] >= indent:
                raise _Unsupported
            return _scalar(content), i + 1
        return self.mapping(i, indent)

    def _nested(self, i: int, parent_indent: int, *, allow_same_indent_seq: bool) -> tuple[Any, int]:
        """Value of ``key:`` / ``-`` with nothing after it: the block on the following lines."""
        if i < self.n:
            nxt = self.indents[i]
            if nxt > parent_indent:
                return self.node(i, nxt)
            if allow_same_indent_seq and nxt == parent_indent:
                content = self.contents[i]
                if content == "-" or content.startswith("- "):
                    return self.sequence(i, nxt)
        return None, i

    def mapping(self, i: int, indent: int) -> tuple[dict[Any, Any], int]:
        result: dict[Any, Any] = {}
        indents = self.indents
        contents = self.contents
        n = self.n
        words = _WORDS
        keys = 0
        while i < n and indents[i] == indent:
            keys += 1
            content = contents[i]
            idx = content.find(": ")
            if idx > 0 and content[0] not in _BAD_START:
                # fast path: plain key, value on the same line
                raw_key = content[:idx]
                if raw_key[-1] == " " or " #" in raw_key or raw_key == "<<":
                    raise _Unsupported
                c = raw_key[0]
                if c in _RESOLVE_FIRST:
                    key: Any = _resolve(raw_key)
                else:
                    key = words.get(raw_key, raw_key)
                rest = content[idx + 2 :]
                if rest and rest[0] == " ":
                    rest = rest.lstrip(" ")
            else:
                if content == "-" or content.startswith("- "):
                    break
                split = _split_key(content)
                if split is None:
                    raise _Unsupported
                key, rest = split
            i += 1
            if rest:
                c = rest[0]
                if c in _BAD_START or " #" in rest or ": " in rest or rest[-1] in ": ":
                    if c == "#":
                        raise _Unsupported
                    result[key] = _scalar(rest)
                elif c in _RESOLVE_FIRST:
                    result[key] = _resolve(rest)
                else:
                    result[key] = words.get(rest, rest)
                if i < n and indents[i] > indent:
                    raise _Unsupported  # multi-line scalar
            else:
                result[key], i = self._nested(i, indent, allow_same_indent_seq=True)
        if (i < n and indents[i] > indent) or len(result) != keys:
            raise _Unsupported  # a repeated key: the full loader names it
        return result, i

    def sequence(self, i: int, indent: int) -> tuple[list[Any], int]:
        result: list[Any] = []
        indents = self.indents
        contents = self.contents
        n = self.n
        while i < n and indents[i] == indent:
            content = contents[i]
            if content == "-":
                value, i = self._nested(i + 1, indent, allow_same_indent_seq=False)
                result.append(value)
                continue
            if not content.startswith("- "):
                break
            body = content[2:]
            stripped = body.lstrip(" ")
            sub_indent = indent + 2 + (len(body) - len(stripped))
            if not stripped or stripped[0] == "#" or stripped == "-" or stripped.startswith("- "):
                raise _Unsupported
            if stripped[0] in "'\"":
                is_mapping = _split_key(stripped) is not None
            else:
                is_mapping = ": " in stripped or stripped.endswith(":")
            if is_mapping:
                # compact mapping: "- key: value" continues on lines indented like "key"
                indents[i] = sub_indent
                contents[i] = stripped
                value, i = self.mapping(i, sub_indent)
            else:
                value = _scalar(stripped)
                i += 1
                if i < n and indents[i] > indent:
                    raise _Unsupported
            result.append(value)
        if i < n and indents[i] > indent:
            raise _Unsupported
        return result, i


def try_load(text: str | bytes) -> tuple[bool, Any]:
    """``(True, data)`` when the fast subset parser handled ``text``, else ``(False, None)``."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return False, None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if (_ASCII_SPECIAL if text.isascii() else _special_chars()).search(text):
        return False, None
    try:
        return True, _Parser(text).document()
    except (_Unsupported, RecursionError, ValueError):
        return False, None


def load(text: str | bytes) -> Any:
    """Parse one YAML document; same result as :func:`aicr_pytest.core.yamlio.load`, faster on snapshots."""
    ok, data = try_load(text)
    return data if ok else yamlio.load(text)
