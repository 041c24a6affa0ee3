"""Writing a snapshot: ``--format yaml|json`` to ``--output FILE|-|cm://namespace/name``.

YAML is block style with data keys sorted; any string a YAML 1.1 *or* 1.2 reader could take for
another type (``"24.04"``, ``"true"``, ``"0o17"``, ``"1e3"``) is quoted, so the file reads back the
same in AICR and in aicr-pytest. JSON is indented by two spaces.

The destination is checked before anything touches the cluster (:func:`parse_destination`): an
unknown format, a ``cm://`` reference without namespace or name, a file in a directory that does
not exist or cannot be written are usage errors (exit 2). The ConfigMap form stores what
``validate --snapshot cm://…`` (and AICR) read back: key ``snapshot.<format>`` plus ``format`` and
``timestamp``. It is the run's deliverable, so it carries no run id and cleanup leaves it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TextIO

import yaml

from aicr_pytest.core.configmaps import result_configmap
from aicr_pytest.core.errors import UsageError, first_line
from aicr_pytest.core.sources import CM_PREFIX, parse_configmap_uri
from aicr_pytest.core.writable import OutputError, errno_text, write_atomic

Format = Literal["yaml", "json"]
FORMATS: Final[tuple[Format, ...]] = ("yaml", "json")

MSG_UNKNOWN_FORMAT: Final = 'unknown output format: "{value}", valid formats are: yaml, json'
MSG_NO_DIRECTORY: Final = "cannot write snapshot to {path}: directory {parent} does not exist"
MSG_PARENT_NOT_DIRECTORY: Final = "cannot write snapshot to {path}: {parent} is not a directory"
MSG_IS_DIRECTORY: Final = "cannot write snapshot to {path}: it is a directory"
MSG_NOT_WRITABLE: Final = "cannot write snapshot to {path}: permission denied"
MSG_WRITE_FILE: Final = "cannot write snapshot to {path}: {error}"
MSG_WRITE_CM: Final = "cannot write snapshot to {uri}: {error}"

#: ``write(configmap) -> None``: server-side apply through the cluster facade.
ConfigMapWriter = Callable[[dict[str, Any]], None]


def parse_format(value: str) -> Format:
    lowered = value.strip().lower()
    for fmt in FORMATS:
        if lowered == fmt:
            return fmt
    raise UsageError(MSG_UNKNOWN_FORMAT.format(value=value))


@dataclass(frozen=True)
class Destination:
    """Where the snapshot goes: stdout, a file, or a ConfigMap."""

    kind: Literal["stdout", "file", "configmap"]
    path: str = ""
    namespace: str = ""
    name: str = ""

    def describe(self) -> str:
        if self.kind == "stdout":
            return "stdout"
        if self.kind == "configmap":
            return f"{CM_PREFIX}{self.namespace}/{self.name}"
        return self.path


def parse_destination(value: str | None) -> Destination:
    """``-``/empty (stdout), ``cm://ns/name`` or a file path, checked as far as possible up front."""
    target = (value or "").strip()
    if target in ("", "-"):
        return Destination("stdout")
    if target.startswith(CM_PREFIX):
        namespace, name = parse_configmap_uri(target)
        return Destination("configmap", namespace=namespace, name=name)
    path = Path(target).expanduser()
    if path.is_dir():
        raise UsageError(MSG_IS_DIRECTORY.format(path=target))
    parent = path.parent if str(path.parent) else Path(".")
    if parent.exists() and not parent.is_dir():
        raise UsageError(MSG_PARENT_NOT_DIRECTORY.format(path=target, parent=parent))
    if not parent.is_dir():
        raise UsageError(MSG_NO_DIRECTORY.format(path=target, parent=parent))
    writable = os.access(path, os.W_OK) if path.exists() else os.access(parent, os.W_OK | os.X_OK)
    if not writable or not _can_create_in(parent):  # os.access is True for root, even under /proc
        raise UsageError(MSG_NOT_WRITABLE.format(path=target))
    return Destination("file", path=str(path))


def _can_create_in(directory: Path) -> bool:
    """Whether a file can really be created in ``directory`` (a temporary probe, removed again)."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".aicr-pytest-probe-"):
            return True
    except OSError:
        return False


class _Dumper(yaml.SafeDumper):
    """Block YAML, sequences indented under their key; ambiguous strings quoted (module docstring)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


# YAML 1.2 core-schema numbers the 1.1 resolvers do not know: make the dumper quote them.
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:0o[0-7]+|[-+]?[0-9]+)$"), list("-+0123456789")
)
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"),
    list("-+.0123456789"),
)


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and value == value.strip(" \t") and "\r" not in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dumps(document: dict[str, Any], fmt: Format) -> str:
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    text: str = yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16
    )
    return text


def configmap_object(dest: Destination, text: str, fmt: Format, timestamp: str) -> dict[str, Any]:
    """The ConfigMap that carries the snapshot (server-side applied: created or updated)."""
    return result_configmap(
        dest.namespace, dest.name, component="Snapshot", fmt=fmt, text=text, timestamp=timestamp
    )


def probe_configmap(dest: Destination, fmt: Format, create: Callable[..., Any]) -> None:
    """``-o cm://ns/name``: a server-side dry-run create of the snapshot's ConfigMap, so a missing
    namespace or a refused write is one line (exit 2) before the capture, not after it.  A ConfigMap
    that already exists is fine (the snapshot replaces it); ``create(obj, dry_run=True)`` is the
    cluster's create."""
    from aicr_pytest.kube.errors import Conflict

    try:
        create(configmap_object(dest, "", fmt, ""), dry_run=True)
    except Conflict:
        return
    except UsageError:
        raise
    except Exception as exc:  # the API: one line, never a traceback
        raise UsageError(MSG_WRITE_CM.format(uri=dest.describe(), error=first_line(exc))) from None


def write(
    document: dict[str, Any],
    fmt: Format,
    dest: Destination,
    *,
    stdout: TextIO | None = None,
    configmap_writer: ConfigMapWriter | None = None,
    text: str | None = None,
) -> str:
    """Write ``document`` (or ``text``, its ``--template`` rendering); returns where it went
    (:meth:`Destination.describe`)."""
    if text is None:
        text = dumps(document, fmt)
    if dest.kind == "stdout":
        out = stdout or sys.stdout
        out.write(text)
        out.flush()
    elif dest.kind == "configmap":
        if configmap_writer is None:
            raise UsageError(
                MSG_WRITE_CM.format(uri=dest.describe(), error="writing a ConfigMap needs a cluster")
            )
        timestamp = str((document.get("metadata") or {}).get("timestamp") or "")
        try:
            configmap_writer(configmap_object(dest, text, fmt, timestamp))
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(MSG_WRITE_CM.format(uri=dest.describe(), error=first_line(exc))) from None
    else:
        try:  # whole or not at all: a full disk never leaves half a snapshot
            write_atomic(dest.path, text, "--output", make_parents=False)
        except OutputError as exc:
            cause = exc.__cause__
            why = errno_text(cause) if isinstance(cause, OSError) else str(exc)
            raise UsageError(MSG_WRITE_FILE.format(path=dest.path, error=why)) from None
    return dest.describe()


__all__ = [
    "FORMATS",
    "ConfigMapWriter",
    "Destination",
    "Format",
    "configmap_object",
    "dumps",
    "parse_destination",
    "parse_format",
    "write",
]
