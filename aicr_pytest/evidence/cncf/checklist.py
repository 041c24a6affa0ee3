"""A CNCF AI-conformance checklist template, loaded and validated (``--cncf-checklist FILE``).

The program (cncf/k8s-ai-conformance ``instructions.md``; ``scripts/validate.go`` reads the same
shape) publishes one template per Kubernetes version, ``docs/AIConformance-1.xx.yaml``: a
``metadata`` mapping (``kubernetesVersion``, ``platformName`` … with ``"[…]"`` placeholders) and a
``spec`` mapping of categories (``accelerators``, ``networking`` …), each a list of requirements
with ``id``, ``description``, ``level`` (``MUST`` or ``SHOULD``) and the fields a vendor fills:
``status``, ``evidence``, ``notes``.

:func:`load_checklist` reads one with :mod:`aicr_pytest.core.yamlio` (YAML 1.2 scalars, alias
expansion bounded) into a :class:`Checklist` that keeps the categories and requirements in the
template's order and each requirement's entry exactly as parsed.  Every unusable template is one
:class:`~aicr_pytest.core.errors.UsageError` line (exit 2): missing or unreadable file, not YAML,
not a checklist (no ``metadata``/``spec`` mapping), a requirement without ``id`` or ``level``, an
unknown ``level``, a repeated ``id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError

Level = Literal["MUST", "SHOULD"]
LEVELS: Final[tuple[Level, ...]] = ("MUST", "SHOULD")
#: the statuses the program accepts (its ``validStatuses``)
IMPLEMENTED: Final = "Implemented"
NOT_IMPLEMENTED: Final = "Not Implemented"
PARTIALLY_IMPLEMENTED: Final = "Partially Implemented"
NOT_APPLICABLE: Final = "N/A"
STATUSES: Final = (IMPLEMENTED, NOT_IMPLEMENTED, PARTIALLY_IMPLEMENTED, NOT_APPLICABLE)
#: the option a template comes from, named in every message unless the caller names another
DEFAULT_LABEL: Final = "--cncf-checklist"

MSG_PREFIX: Final = "[INVALID_REQUEST] {label} {path}: "
MSG_NOT_FOUND: Final = "file not found"
MSG_UNREADABLE: Final = "cannot read the file: {reason}"
MSG_NOT_YAML: Final = "not valid YAML: {reason}"
MSG_NOT_CHECKLIST: Final = "not a CNCF AI-conformance checklist: no {missing} mapping"
MSG_CATEGORY_NOT_LIST: Final = "spec.{category} is not a list of requirements"
MSG_ENTRY_NOT_MAPPING: Final = "spec.{category}[{index}] is not a mapping"
MSG_NO_ID: Final = "spec.{category}[{index}] has no id"
MSG_NO_LEVEL: Final = 'requirement "{id}" (spec.{category}) has no level'
MSG_BAD_LEVEL: Final = (
    'requirement "{id}" (spec.{category}): unknown level {level!r} (expected MUST or SHOULD)'
)
MSG_BAD_FIELD: Final = 'requirement "{id}" (spec.{category}): {field} is not a string'
MSG_DUPLICATE: Final = 'requirement "{id}" appears more than once (spec.{first} and spec.{second})'
MSG_NO_REQUIREMENTS: Final = "the checklist has no requirements"


@dataclass(frozen=True)
class Requirement:
    """One requirement of a template; ``entry`` is its mapping as parsed (every key, in order)."""

    category: str
    id: str
    level: Level
    description: str | None
    entry: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Checklist:
    """A validated template: its metadata and its requirements in the template's order."""

    path: Path
    metadata: Mapping[str, Any]
    categories: tuple[str, ...]
    requirements: tuple[Requirement, ...]
    #: the whole document as parsed (top-level keys beyond ``metadata``/``spec`` included)
    document: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def kubernetes_version(self) -> str | None:
        value = self.metadata.get("kubernetesVersion", self.metadata.get("kubernetes_version"))
        return value if isinstance(value, str) else None

    def requirement(self, requirement_id: str) -> Requirement | None:
        return next((r for r in self.requirements if r.id == requirement_id), None)

    def in_category(self, category: str) -> tuple[Requirement, ...]:
        return tuple(r for r in self.requirements if r.category == category)


def _yaml_reason(exc: yaml.YAMLError) -> str:
    """A parse error in one line: the problem and where."""
    if isinstance(exc, yaml.MarkedYAMLError):
        where = f" (line {exc.problem_mark.line + 1})" if exc.problem_mark is not None else ""
        return f"{exc.problem or exc.context or 'syntax error'}{where}"
    return " ".join(str(exc).split()) or type(exc).__name__


def read_yaml(path: Path, label: str) -> Any:
    """One YAML document from ``path``; a :class:`UsageError` when it is missing, unreadable or not
    YAML (shared with the PRODUCT.yaml check)."""
    prefix = MSG_PREFIX.format(label=label, path=path)
    if not path.exists():
        raise UsageError(prefix + MSG_NOT_FOUND)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UsageError(prefix + MSG_UNREADABLE.format(reason=reason)) from None
    try:
        return yamlio.load(text)
    except yaml.YAMLError as exc:
        raise UsageError(prefix + MSG_NOT_YAML.format(reason=_yaml_reason(exc))) from None


def parse_checklist(data: Any, path: Path, label: str = DEFAULT_LABEL) -> Checklist:
    """Validate parsed template data (module docstring); raises :class:`UsageError`."""
    prefix = MSG_PREFIX.format(label=label, path=path)
    if not isinstance(data, Mapping):
        raise UsageError(prefix + MSG_NOT_CHECKLIST.format(missing="metadata/spec"))
    missing = [key for key in ("metadata", "spec") if not isinstance(data.get(key), Mapping)]
    if missing:
        raise UsageError(prefix + MSG_NOT_CHECKLIST.format(missing="/".join(missing)))
    requirements: list[Requirement] = []
    seen: dict[str, str] = {}
    for category, entries in data["spec"].items():
        category = str(category)
        if not isinstance(entries, list):
            raise UsageError(prefix + MSG_CATEGORY_NOT_LIST.format(category=category))
        for index, entry in enumerate(entries):
            requirements.append(_requirement(entry, category, index, prefix))
            rid = requirements[-1].id
            if rid in seen:
                raise UsageError(prefix + MSG_DUPLICATE.format(id=rid, first=seen[rid], second=category))
            seen[rid] = category
    if not requirements:
        raise UsageError(prefix + MSG_NO_REQUIREMENTS)
    return Checklist(
        path=path,
        metadata=data["metadata"],
        categories=tuple(str(c) for c in data["spec"]),
        requirements=tuple(requirements),
        document=data,
    )


def _requirement(entry: Any, category: str, index: int, prefix: str) -> Requirement:
    if not isinstance(entry, Mapping):
        raise UsageError(prefix + MSG_ENTRY_NOT_MAPPING.format(category=category, index=index))
    rid = entry.get("id")
    if rid is None or rid == "":
        raise UsageError(prefix + MSG_NO_ID.format(category=category, index=index))
    if not isinstance(rid, str):
        raise UsageError(prefix + MSG_BAD_FIELD.format(id=rid, category=category, field="id"))
    if entry.get("level") is None:
        raise UsageError(prefix + MSG_NO_LEVEL.format(id=rid, category=category))
    level = entry["level"]
    if level not in LEVELS:
        raise UsageError(prefix + MSG_BAD_LEVEL.format(id=rid, category=category, level=level))
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        raise UsageError(prefix + MSG_BAD_FIELD.format(id=rid, category=category, field="description"))
    return Requirement(category, rid, level, description, entry)


def load_checklist(path: str | Path, label: str = DEFAULT_LABEL) -> Checklist:
    """Read and validate the template at ``path``; ``label`` names the option in messages."""
    given = Path(path).expanduser()
    return parse_checklist(read_yaml(given, label), given, label)


__all__ = [
    "DEFAULT_LABEL",
    "IMPLEMENTED",
    "LEVELS",
    "MSG_BAD_LEVEL",
    "MSG_NOT_CHECKLIST",
    "MSG_NOT_FOUND",
    "MSG_NO_ID",
    "MSG_NO_LEVEL",
    "NOT_APPLICABLE",
    "NOT_IMPLEMENTED",
    "PARTIALLY_IMPLEMENTED",
    "STATUSES",
    "Checklist",
    "Level",
    "Requirement",
    "load_checklist",
    "parse_checklist",
    "read_yaml",
]
