"""YAML loading with YAML 1.2 core-schema scalars on top of PyYAML, with alias expansion bounded.

PyYAML implements YAML 1.1, where ``on``/``off``/``yes``/``no``/``y``/``n`` are booleans,
``0777`` is octal and ``1_000`` is an int.  Go's ``sigs.k8s.io/yaml``/``yaml.v3`` (what AICR
uses) follow YAML 1.2: only ``true``/``false`` (any case form of those) are booleans.  We use a
loader whose implicit resolvers follow the 1.2 core schema so recipes read the same here as in AICR.

Every document is composed first and its aliases are counted before anything is constructed, the
way Go's yaml decoders guard against alias bombs (a few KB of ``&a``/``*a`` that expand to gigabytes
once a later stage copies, hashes or serialises the value): a document whose alias expansions
outgrow its real nodes is refused with ``document contains excessive aliasing``, and an anchor
that contains itself with ``anchor … value contains itself``.  Both are
:class:`yaml.MarkedYAMLError`, so every caller's existing one-line error handling names the file
and line.  :func:`load_with` applies the same bound to any other PyYAML loader class.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

try:  # the C loader is much faster on big snapshots
    _Base: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader


class Yaml12Loader(_Base):  # type: ignore[misc,valid-type]
    """SafeLoader with YAML 1.2 core-schema implicit typing."""


Yaml12Loader.yaml_implicit_resolvers = {}

_RESOLVERS: list[tuple[str, re.Pattern[str], str]] = [
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    ("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), "~nN\x00"),
    (
        "tag:yaml.org,2002:int",
        re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        "-+0123456789",
    ),
    (
        "tag:yaml.org,2002:float",
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        "-+.0123456789",
    ),
]
for _tag, _regexp, _first in _RESOLVERS:
    Yaml12Loader.add_implicit_resolver(_tag, _regexp, list(_first))
# Merge keys (`<<: *anchor`) are not core schema, but yaml.v3 honours them, so we do too.
Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
# PyYAML needs an entry for the empty scalar (first char None) so `key:` stays null.
Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [None])


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    value = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if value.startswith("0o"):
        return int(value[2:], 8)
    if value.startswith("0x"):
        return int(value[2:], 16)
    return int(value, 10)


def _construct_bool(loader: yaml.SafeLoader, node: yaml.Node) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"  # type: ignore[arg-type]


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)


#: below this many decoded nodes, alias expansions may make up 99 % of them; above the high mark
#: only 10 %, and linearly in between (the ratio Go's yaml.v2/v3 decoders allow)
_RATIO_LOW, _RATIO_HIGH = 400_000, 4_000_000
#: no document with at most this many alias expansions or decoded nodes is ever refused
_MIN_ALIASES, _MIN_DECODED = 100, 1000

MSG_EXCESSIVE_ALIASING = "document contains excessive aliasing"
MSG_RECURSIVE_ANCHOR = "anchor {anchor}value contains itself"


class AliasingError(yaml.MarkedYAMLError):
    """A document whose aliases would expand beyond the bound (or into themselves)."""


def allowed_alias_ratio(decoded: int) -> float:
    """The share of alias expansions tolerated among ``decoded`` nodes."""
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def check_aliasing(root: yaml.Node) -> None:
    """Walk ``root`` as construction would (aliases expanded), counting; raise :class:`AliasingError`.

    The walk stops as soon as the expansions outgrow :func:`allowed_alias_ratio`, so its cost is
    bounded by the document's real size, never by what the aliases would expand to.
    """
    seen: set[int] = set()
    open_nodes: set[int] = set()
    decoded = aliased = 0
    # (node, inside an alias expansion, leaving the node's first visit)
    stack: list[tuple[yaml.Node, bool, bool]] = [(root, False, False)]
    while stack:
        node, in_alias, leaving = stack.pop()
        key = id(node)
        if leaving:
            open_nodes.discard(key)
            continue
        first = key not in seen
        if not first:
            if key in open_nodes:
                anchor = getattr(node, "anchor", None)
                raise AliasingError(
                    problem=MSG_RECURSIVE_ANCHOR.format(anchor=f"'{anchor}' " if anchor else ""),
                    problem_mark=node.start_mark,
                )
            in_alias = True
        decoded += 1
        if in_alias:
            aliased += 1
            if (
                aliased > _MIN_ALIASES
                and decoded > _MIN_DECODED
                and aliased / decoded > allowed_alias_ratio(decoded)
            ):
                raise AliasingError(problem=MSG_EXCESSIVE_ALIASING, problem_mark=node.start_mark)
        seen.add(key)
        if isinstance(node, yaml.ScalarNode):
            continue
        if first:
            open_nodes.add(key)
            stack.append((node, False, True))
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        else:
            children = list(node.value)
        stack.extend((child, in_alias, False) for child in reversed(children))


MSG_DUPLICATE_KEY = "line {line}: mapping key {key} already defined at line {first}"


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping that names one key twice: refused as Go's yaml.v3 decoder refuses it (with no mark:
    the problem names both lines, so a caller that appends the mark's line does not repeat it)."""


def go_quote(value: str) -> str:
    """A key as Go's ``%#v`` prints a string (double-quoted, escapes as Go's ``strconv.Quote``)."""
    out = json.dumps(value, ensure_ascii=False)
    return out.replace("\u007f", "\x7f")


def check_unique_keys(root: yaml.Node) -> None:
    """Raise :class:`DuplicateKeyError` for the first mapping (in document order) that repeats a
    scalar key, naming its line, the key and the line of its first definition (1-based), the way
    yaml.v3 does; keys a merge (``<<``) brings in are not the mapping's own and may be overridden.
    Each node is visited once, also when aliases reach it again."""
    seen: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, yaml.ScalarNode):
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key, _ in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    continue
                line = key.start_mark.line + 1
                if key.value in first:
                    raise DuplicateKeyError(
                        problem=MSG_DUPLICATE_KEY.format(
                            line=line, key=go_quote(str(key.value)), first=first[key.value]
                        )
                    )
                first[key.value] = line
            children = [child for pair in node.value for child in pair]
        else:
            children = list(node.value)
        stack.extend(reversed(children))


def _construct(loader: Any, node: yaml.Node | None, text: str | bytes) -> Any:
    if node is None:
        return None
    check_unique_keys(node)
    has_asterisk = b"*" in text if isinstance(text, bytes) else "*" in text
    if has_asterisk:  # no alias without one
        check_aliasing(node)
    return loader.construct_document(node)


def load_with(text: str | bytes, loader_class: type[yaml.SafeLoader]) -> Any:
    """Parse one YAML document with ``loader_class``, alias expansion bounded."""
    loader = loader_class(text)
    try:
        return _construct(loader, loader.get_single_node(), text)
    finally:
        loader.dispose()


def load_all_with(text: str | bytes, loader_class: type[yaml.SafeLoader]) -> Iterator[Any]:
    """Parse a multi-document stream with ``loader_class``, alias expansion bounded per document."""
    loader = loader_class(text)
    try:
        while loader.check_node():
            yield _construct(loader, loader.get_node(), text)
    finally:
        loader.dispose()


def load(text: str | bytes) -> Any:
    """Parse one YAML document with YAML 1.2 scalar semantics (alias expansion bounded)."""
    return load_with(text, Yaml12Loader)


def load_all(text: str | bytes) -> Iterator[Any]:
    """Parse a multi-document YAML stream with YAML 1.2 scalar semantics (alias expansion bounded)."""
    return load_all_with(text, Yaml12Loader)


def dump(data: Any) -> str:
    """Serialize to block-style YAML, keys in insertion order."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
