"""YAML loading with YAML 1.2 core-schema scalars on top of PyYAML.

PyYAML implements YAML 1.1, where ``on``/``off``/``yes``/``no``/``y``/``n`` are booleans,
``0777`` is octal and ``1_000`` is an int.  Go's ``sigs.k8s.io/yaml``/``yaml.v3`` (what AICR
uses) follow YAML 1.2: only ``true``/``false`` (any case form of those) are booleans.  We use a
loader whose implicit resolvers follow the 1.2 core schema so recipes read the same here as in AICR.
"""

from __future__ import annotations

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


def load(text: str | bytes) -> Any:
    """Parse one YAML document with YAML 1.2 scalar semantics."""
    return yaml.load(text, Loader=Yaml12Loader)


def load_all(text: str | bytes) -> Iterator[Any]:
    """Parse a multi-document YAML stream with YAML 1.2 scalar semantics."""
    return yaml.load_all(text, Loader=Yaml12Loader)


def dump(data: Any) -> str:
    """Serialize to block-style YAML, keys in insertion order."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
