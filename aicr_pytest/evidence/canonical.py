"""Deterministic serialization of bundle files, and digests.

* YAML (``recipe.yaml``, ``snapshot.yaml``, ``pointer.yaml``): keys sorted at every level, 2-space
  indent, block sequences indented under their key, ``""`` for empty strings, timestamps as plain
  RFC 3339 UTC (``2026-06-30T22:17:15Z``).  This reproduces AICR's committed pointer files byte for
  byte.  It does *not* reproduce Go yaml.v3's recipe bytes (4-space indent), so the recipe digest
  of one recipe differs between aicr-pytest and AICR; compare digests from one implementation only.
* JSON: pretty files are 2-space + ``\\n``; in-toto Statements are compact with the predicate's
  keys sorted recursively and integers kept integers.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import yaml

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
