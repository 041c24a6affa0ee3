"""Deterministic serialization of bundle files, and digests.

* YAML (``recipe.yaml``, ``snapshot.yaml``, ``pointer.yaml``): keys sorted at every level, 2-space
  indent, block sequences indented under their key, ``""`` for empty strings, timestamps as plain
  RFC 3339 UTC (``2026-06-30T22:17:15Z``).  This reproduces AICR's committed pointer files byte for
  byte.  It does *not* reproduce Go yaml.v3's recipe bytes (4-space indent), so the recipe digest
  of one recipe differs between aicr-pytest and AICR; compare digests from one implementation only.
* recipe-evidence/v3's recipe digest (:func:`recipe_digest_for_type`) is taken over the recipe
  file's bytes without the top-level ``metadata.version`` entry (and without ``metadata`` when that
  was its only key), as AICR's ``SubjectDigestV3`` does.  The entry is cut from the canonical text
  line by line, so the result is the same whichever implementation's indentation the file has.
* JSON: pretty files are 2-space + ``\\n``; in-toto Statements are compact with the predicate's
  keys sorted recursively and integers kept integers.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import yaml

from aicr_pytest.evidence import constants as C

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_datetime(dumper: yaml.SafeDumper, value: datetime) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", format_time(value))


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if value == "":
        return dumper.represent_scalar("tag:yaml.org,2002:str", "", style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(datetime, _represent_datetime)
_Dumper.add_representer(str, _represent_str)


def format_time(value: datetime) -> str:
    """RFC 3339 UTC with ``Z``, truncated to seconds."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime(_TIME_FORMAT)


def parse_time(value: object) -> datetime:
    """``attestedAt`` as YAML gives it (aware datetime) or as text; raises ``ValueError``."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            raise ValueError(f"timestamp {value!r} has no time zone")
        return parsed.astimezone(UTC)
    raise ValueError(f"expected a timestamp, got {type(value).__name__}")


def dump_yaml(data: Any) -> bytes:
    """Canonical YAML bytes (sorted keys, LF line endings, UTF-8)."""
    text = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=2**31 - 1,
        indent=2,
    )
    return text.encode("utf-8")


def pretty_json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def sort_keys(value: Any) -> Any:
    """A copy with every mapping's keys sorted (lists keep their order)."""
    if isinstance(value, dict):
        return {k: sort_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sort_keys(v) for v in value]
    return value


def compact_json(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>``."""
    return "sha256:" + sha256_hex(data)


def is_sha256_digest(value: object) -> bool:
    """Exactly ``sha256:`` + 64 lowercase hex characters."""
    return (
        isinstance(value, str)
        and value.startswith("sha256:")
        and len(value) == 71
        and all(c in "0123456789abcdef" for c in value[7:])
    )


def is_hex64(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """The index after the entry at ``start``: its continuation lines are blank or deeper."""
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return end


def strip_metadata_version(recipe_yaml: bytes) -> bytes:
    """Canonical recipe YAML without its top-level ``metadata.version`` (and without an emptied
    ``metadata``); bytes without that entry come back unchanged."""
    text = recipe_yaml.decode("utf-8")
    lines = text.splitlines(keepends=True)
    for top, line in enumerate(lines):
        if line.rstrip("\r\n") != "metadata:":
            continue
        end = _block_end(lines, top, 0)
        children = [i for i in range(top + 1, end) if lines[i].strip()]
        if not children:
            return recipe_yaml
        indent = _indent(lines[children[0]])
        for i in children:
            if _indent(lines[i]) == indent and lines[i].strip().split(":", 1)[0] == "version":
                stop = _block_end(lines, i, indent)
                rest = [j for j in children if j < i or j >= stop]
                drop = range(top, end) if not rest else range(i, stop)
                return "".join(x for k, x in enumerate(lines) if k not in drop).encode("utf-8")
        return recipe_yaml
    return recipe_yaml


def recipe_digest_for_type(recipe_yaml: bytes, predicate_type: str) -> str:
    """The recipe digest (bare hex) a predicate of ``predicate_type`` records for these bytes."""
    if predicate_type == C.PREDICATE_TYPE_V3:
        return sha256_hex(strip_metadata_version(recipe_yaml))
    return sha256_hex(recipe_yaml)
