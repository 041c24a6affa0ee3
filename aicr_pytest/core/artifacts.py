"""Evidence artifacts: labelled blocks of data a check records.

A check records what it looked at and what it did as artifacts.  Each one is printed in AICR's
block format, so the CTRF ``stdout`` of a check reads like AICR's::

    --- <label> ---
    Equivalent: <kubectl-like command>      (only when one is given)

    <data>

and the same artifacts travel as structured data (CTRF ``extra["aicr.artifacts"]``) for the
evidence renderers (CNCF evidence files, the HTML report), which must not re-parse stdout.

Secrets never belong in an artifact: the recorder redacts every value it was told is secret.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

EXTRA_KEY = "aicr.artifacts"
REDACTED = "<redacted>"

#: caps for the structured copy (the stdout copy has the usual CTRF caps)
MAX_ARTIFACT_LINES = 1000
MAX_LINE_CHARS = 512


@dataclass(frozen=True)
class Artifact:
    """One labelled evidence block."""

    label: str
    data: str
    equivalent: str | None = None

    def block(self) -> list[str]:
        """The block as stdout lines, in AICR's format."""
        lines = [f"--- {self.label} ---"]
        if self.equivalent:
            lines.append(f"Equivalent: {self.equivalent}")
        lines.append("")
        lines.extend(self.data.splitlines() or [""])
        return lines

    def to_json(self) -> dict[str, Any]:
        data_lines = self.data.splitlines()
        truncated = len(data_lines) > MAX_ARTIFACT_LINES
        kept = [_cut(line) for line in data_lines[-MAX_ARTIFACT_LINES:]]
        out: dict[str, Any] = {"label": self.label, "data": "\n".join(kept)}
        if self.equivalent:
            out["equivalent"] = self.equivalent
        if truncated:
            out["truncatedLines"] = len(data_lines) - MAX_ARTIFACT_LINES
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Artifact:
        """Read one structured artifact; a malformed entry raises ``ValueError`` (fail closed)."""
        label, data = raw.get("label"), raw.get("data")
        equivalent = raw.get("equivalent")
        if not isinstance(label, str) or not label or not isinstance(data, str):
            raise ValueError(f"malformed evidence artifact: {dict(raw)!r}")
        if equivalent is not None and not isinstance(equivalent, str):
            raise ValueError(f"malformed evidence artifact equivalent: {equivalent!r}")
        return cls(label=label, data=data, equivalent=equivalent)


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [truncated {len(line) - MAX_LINE_CHARS} chars]"


def render_value(data: object) -> str:
    """Artifact data as text: strings as they are, sequences one item a line, mappings ``k: v``."""
    if isinstance(data, str):
        return data
    if isinstance(data, Mapping):
        return "\n".join(f"{k}: {v}" for k, v in data.items())
    if isinstance(data, Iterable):
        return "\n".join(str(item) for item in data)
    return str(data)


@dataclass
class ArtifactRecorder:
    """Collects a check's artifacts and prints each one through ``emit`` as it is recorded."""

    emit: Callable[[str], None]
    secrets: Sequence[str] = ()
    artifacts: list[Artifact] = field(default_factory=list)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, REDACTED)
        return text

    def record(self, label: str, data: object, equivalent: str | None = None) -> Artifact:
        artifact = Artifact(
            label=self.redact(label),
            data=self.redact(render_value(data)),
            equivalent=self.redact(equivalent) if equivalent else None,
        )
        self.artifacts.append(artifact)
        for line in artifact.block():
            self.emit(line)
        return artifact

    def to_json(self) -> list[dict[str, Any]]:
        return [a.to_json() for a in self.artifacts]


def artifacts_from_extra(extra: Mapping[str, Any] | None) -> list[Artifact]:
    """The structured artifacts of one CTRF test (``[]`` when it recorded none)."""
    raw = (extra or {}).get(EXTRA_KEY)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"malformed {EXTRA_KEY}: expected a list, got {type(raw).__name__}")
    return [Artifact.from_json(item) for item in raw]


__all__ = [
    "EXTRA_KEY",
    "MAX_ARTIFACT_LINES",
    "REDACTED",
    "Artifact",
    "ArtifactRecorder",
    "artifacts_from_extra",
    "render_value",
]
