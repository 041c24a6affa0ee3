"""Write a generated recipe: YAML or JSON, to a file, stdout (``-``) or ``cm://namespace/name``.

YAML is block style with sequences indented under their key (as AICR writes it); any string that a
YAML reader could take for another type (``"24.04"``, ``"true"``, ``"0o17"``) is quoted, so the file
reads back identically under YAML 1.1 and 1.2 rules.  JSON is indented by two spaces.

The ConfigMap form stores the document the way ``validate --recipe cm://…`` (and AICR) read it back:
key ``snapshot.<format>`` plus ``format`` and ``timestamp``.  Writing needs the cluster, so
:mod:`aicr_pytest.kube` is imported only for that.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml

from aicr_pytest.core.configmaps import result_configmap
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.sources import CM_PREFIX, parse_configmap_uri
from aicr_pytest.core.writable import OutputError, errno_text, write_atomic

Format = Literal["yaml", "json"]
FORMATS: tuple[Format, ...] = ("yaml", "json")

MSG_UNKNOWN_FORMAT = 'unknown output format: "{value}", valid formats are: yaml, json'
MSG_WRITE_FILE = "cannot write recipe to {path}: {error}"
MSG_WRITE_CM = "cannot write recipe to {uri}: {error}"

#: ``write(namespace, name, configmap) -> None``; the CLI passes one backed by the cluster facade.
ConfigMapWriter = Callable[[str, str, dict[str, Any]], None]


def parse_format(value: str) -> Format:
    lowered = value.strip().lower()
    for fmt in FORMATS:
        if lowered == fmt:
            return fmt
    raise UsageError(MSG_UNKNOWN_FORMAT.format(value=value))


class _Dumper(yaml.SafeDumper):
    """Block YAML with indented sequences; strings that resolve to non-strings get quoted."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


# YAML 1.2 core-schema numbers that the YAML 1.1 resolvers do not know (``0o17``, ``1e3``): quote them.
_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^0o[0-7]+$"), ["0"])
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"),
    list("-+.0123456789"),
)


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.startswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dumps(document: dict[str, Any], fmt: Format) -> str:
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    text: str = yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096
    )
    return text


def configmap_object(namespace: str, name: str, document: dict[str, Any], fmt: Format) -> dict[str, Any]:
    """The ConfigMap that carries ``document`` (server-side applied, so create or update)."""
    timestamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    component = str(document.get("kind") or "RecipeResult")
    return result_configmap(
        namespace, name, component=component, fmt=fmt, text=dumps(document, fmt), timestamp=timestamp
    )


def write(
    document: dict[str, Any],
    fmt: Format,
    destination: str | None,
    *,
    stdout: TextIO | None = None,
    configmap_writer: ConfigMapWriter | None = None,
) -> str:
    """Write ``document``; returns where it went (``-``, the path, or the ``cm://`` URI)."""
    target = (destination or "").strip()
    if target in ("", "-"):
        out = stdout or sys.stdout
        out.write(dumps(document, fmt))
        out.flush()
        return "-"
    if target.startswith(CM_PREFIX):
        namespace, name = parse_configmap_uri(target)
        if configmap_writer is None:
            raise UsageError(MSG_WRITE_CM.format(uri=target, error="writing a ConfigMap needs a cluster"))
        configmap_writer(namespace, name, configmap_object(namespace, name, document, fmt))
        return target
    path = Path(target).expanduser()
    try:  # whole or not at all: a full disk never leaves half a recipe
        write_atomic(path, dumps(document, fmt), "--output", make_parents=False)
    except OutputError as exc:
        cause = exc.__cause__
        why = errno_text(cause) if isinstance(cause, OSError) else str(exc)
        raise UsageError(MSG_WRITE_FILE.format(path=target, error=why)) from None
    return target


__all__ = ["FORMATS", "ConfigMapWriter", "Format", "configmap_object", "dumps", "parse_format", "write"]
