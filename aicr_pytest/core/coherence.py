"""Load-time coherence of a recipe's component refs, shared by every loader.

``aicr validate`` rejects a recipe whose *enabled* component refs cannot be deployed as declared:
every problem, sorted and joined with ``; ``, in one ``recipe has incoherent component ref(s): …``
error (exit 2, before anything runs).  A ref without ``type`` first gets its registry type (Kustomize
when the registry entry has ``kustomize.defaultSource``, else Helm); the type is matched
case-insensitively.  :func:`coherence_problem` is the per-ref rule, used by ``aicr-pytest recipe``
(:mod:`aicr_pytest.recipegen`) on what it generates and by ``validate`` on what it loads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from aicr_pytest.core.errors import UsageError

MSG_INCOHERENT: Final = "recipe has incoherent component ref(s): {problems}"


class RefShape(Protocol):
    """The fields of a component ref the coherence rules read (``None`` reads as empty)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str | None: ...
    @property
    def tag(self) -> str | None: ...
    @property
    def path(self) -> str | None: ...
    @property
    def chart(self) -> str | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def version(self) -> str | None: ...
    @property
    def manifest_files(self) -> Sequence[str]: ...
    @property
    def patches(self) -> Sequence[str]: ...


def coherence_problem(ref: RefShape, type_override: str | None = None) -> str | None:
    """Why an enabled ref cannot be deployed as declared (AICR's coherence rules), or ``None``.

    ``type_override``: the type to judge it as (the registry back-fill of a ref without one).
    """
    name = ref.name
    ref_type = (type_override if type_override is not None else ref.type) or ""
    tag, path = ref.tag or "", ref.path or ""
    chart, source, version = ref.chart or "", ref.source or "", ref.version or ""
    if ref.patches:
        return f'component "{name}" declares patches, but no deployer applies patch files; remove `patches`'
    if ref_type.lower() == "helm":
        if tag or path:
            return f'component "{name}" is Helm but carries Kustomize field(s) (tag="{tag}", path="{path}")'
        fields = (("chart name", chart), ("source", source), ("chart version", version))
        for label, value in fields:
            if value != value.strip():
                return f'Helm component "{name}" has a {label} with surrounding whitespace ({value!r})'
        if version and not version.strip().removeprefix("v"):
            return f'Helm component "{name}" has chart version "{version}"; set a full chart version'
        if source:
            if not version:
                return f'Helm component "{name}" has no chart version; set version: on the componentRef'
        elif chart:
            return f'Helm component "{name}" has a chart name ("{chart}") but no source repository'
        elif not ref.manifest_files:
            return f'Helm component "{name}" has no deployable primary (no source, chart or manifestFiles)'
        return None
    if ref_type.lower() == "kustomize":
        if not path:
            return f'component "{name}" is Kustomize but has no path; a path is required to build from'
        if tag and not source:
            return f'component "{name}" is Kustomize with tag "{tag}" but no source'
        if ref.manifest_files:
            return f'component "{name}" is Kustomize but also declares manifestFiles'
        return None
    return f'component "{name}" has unsupported type "{ref_type}"; expected "Helm" or "Kustomize"'


def registry_type(entry: dict[str, Any] | None) -> str | None:
    """The type the registry gives a component (``None``: not in the registry)."""
    if entry is None:
        return None
    kustomize = entry.get("kustomize")
    if isinstance(kustomize, dict) and kustomize.get("defaultSource"):
        return "Kustomize"
    return "Helm"


def check_coherence(
    refs: Sequence[tuple[RefShape, bool]], registry_entry: Callable[[str], dict[str, Any] | None]
) -> None:
    """Raise the one ``recipe has incoherent component ref(s): …`` error for ``(ref, enabled)`` pairs.

    Disabled refs are not judged; an enabled ref without a type is judged as its registry type
    (looked up only when needed).
    """
    problems: list[str] = []
    for ref, enabled in refs:
        if not enabled:
            continue
        override = registry_type(registry_entry(ref.name)) if not ref.type else None
        problem = coherence_problem(ref, override)
        if problem:
            problems.append(problem)
    if problems:
        raise UsageError(MSG_INCOHERENT.format(problems="; ".join(sorted(problems))))


__all__ = ["MSG_INCOHERENT", "RefShape", "check_coherence", "coherence_problem", "registry_type"]
