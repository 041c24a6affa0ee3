"""Load the overlay tree — ``base.yaml``, overlays and mixins — from a data tree.

Walk rules, as AICR's metadata store applies them to every file of the data root:

* a path containing ``checks/`` is skipped (health-check assert files);
* ``mixins/*.yaml`` are mixins (strict decoding, ``kind: RecipeMixin``, duplicate names are errors);
* a path containing ``components/`` is a values or manifest file, not metadata;
* otherwise only ``*.yaml`` counts, except ``registry.yaml`` and ``data-v1.yaml``; a document whose
  ``kind`` is set to anything but ``RecipeMetadata`` (a validator catalog, a recipe, a snapshot) is skipped;
* ``base.yaml`` under an ``overlays/`` path is the root of every chain; every other document is an
  overlay keyed by ``metadata.name`` — a later file with the same name silently replaces an earlier one.

With ``--data DIR`` the external files are visited first, then the embedded files that ``DIR`` does not
shadow by path — so an external overlay that reuses an embedded overlay's *name* at a different path
is replaced by the embedded one (reuse the path to replace an overlay).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError
from aicr_pytest.recipegen.criteria import CriteriaRegistry
from aicr_pytest.recipegen.merge import validate_dependencies
from aicr_pytest.recipegen.spec import (
    DecodeError,
    Mixin,
    Overlay,
    decode_mixin,
    decode_overlay,
    load_text,
    load_typed,
)

OVERLAY_KIND = "RecipeMetadata"
MIXIN_KIND = "RecipeMixin"
BASE_NAME = "base"

MSG_PARSE = "failed to parse {path}: {problem}"
MSG_PARSE_MIXIN = "failed to parse mixin {path} (unknown fields are not allowed): {problem}"
MSG_MIXIN_KIND = 'mixin file {path} has wrong kind "{kind}", expected "RecipeMixin"'
MSG_MIXIN_DUPLICATE = 'duplicate mixin name "{name}" in {path}'
MSG_NO_BASE = "base.yaml not found (the data tree needs overlays/base.yaml)"
MSG_BASE_INVALID = "base recipe validation failed: {problem}"


@dataclass
class OverlayStore:
    """Everything generation needs from the data tree's metadata files."""

    base: Overlay
    overlays: dict[str, Overlay]
    mixins: dict[str, Mixin]
    registry: CriteriaRegistry
    #: ``registry.yaml`` components by name (merged across layers), read once.
    components: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Every metadata file read, in walk order (data-root-relative), for diagnostics.
    files: list[str] = field(default_factory=list)

    def get(self, name: str) -> Overlay | None:
        """The overlay called ``name``; ``""`` and ``base`` are the base."""
        if name in ("", BASE_NAME):
            return self.base
        return self.overlays.get(name)


def _walk(root: Path) -> Iterator[str]:
    """Data-root-relative POSIX paths of the regular files under ``root``, in lexical order."""
    for current, dirs, files in os.walk(root):
        dirs.sort()
        rel_dir = PurePosixPath(Path(current).relative_to(root).as_posix())
        for name in sorted(files):
            rel = rel_dir / name
            yield str(rel) if str(rel_dir) != "." else name


def metadata_paths(data: DataTree) -> list[str]:
    """Walk order: the external layer's files, then the embedded files it does not shadow."""
    seen: set[str] = set()
    ordered: list[str] = []
    for root in data.roots:
        for rel in _walk(root):
            if rel not in seen:
                seen.add(rel)
                ordered.append(rel)
    return ordered


def _problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return ("; ".join(p for p in (exc.context, exc.problem) if p) or "syntax error") + where
    return str(exc).splitlines()[0] if str(exc) else "syntax error"


def _parse_two_ways(body: bytes, path: str, message: str) -> tuple[object, object]:
    try:
        return load_text(body), load_typed(body)
    except yaml.YAMLError as exc:
        raise UsageError(message.format(path=path, problem=_problem(exc))) from None


def load_store(data: DataTree) -> OverlayStore:
    """Read every overlay and mixin of ``data``; errors are one-line :class:`UsageError`."""
    base: Overlay | None = None
    overlays: dict[str, Overlay] = {}
    mixins: dict[str, Mixin] = {}
    registry = CriteriaRegistry()
    files: list[str] = []
    for rel in metadata_paths(data):
        filename = PurePosixPath(rel).name
        if "checks/" in rel:
            continue
        if rel.startswith("mixins/"):
            if not filename.endswith(".yaml"):
                continue
            text_doc, typed_doc = _parse_two_ways(data.read_bytes(rel), rel, MSG_PARSE_MIXIN)
            try:
                kind, mixin = decode_mixin(text_doc, typed_doc, rel)
            except DecodeError as exc:
                raise UsageError(MSG_PARSE_MIXIN.format(path=rel, problem=exc)) from None
            if kind != MIXIN_KIND:
                raise UsageError(MSG_MIXIN_KIND.format(path=rel, kind=kind))
            if mixin.name in mixins:
                raise UsageError(MSG_MIXIN_DUPLICATE.format(name=mixin.name, path=rel))
            mixins[mixin.name] = mixin
            files.append(rel)
            continue
        if "components/" in rel or not filename.endswith(".yaml"):
            continue
        if filename in ("data-v1.yaml", "registry.yaml"):
            continue
        text_doc, typed_doc = _parse_two_ways(data.read_bytes(rel), rel, MSG_PARSE)
        try:
            kind, name, overlay = decode_overlay(text_doc, typed_doc, rel)
        except DecodeError as exc:
            raise UsageError(MSG_PARSE.format(path=rel, problem=exc)) from None
        if kind and kind != OVERLAY_KIND:
            continue
        files.append(rel)
        if filename == "base.yaml" and "overlays/" in rel:
            base = overlay
        else:
            overlays[name] = overlay
            registry.register(overlay.spec.criteria)
    if base is None:
        raise UsageError(MSG_NO_BASE)
    try:
        validate_dependencies(base.spec.component_refs)
    except UsageError as exc:
        raise UsageError(MSG_BASE_INVALID.format(problem=exc)) from None
    components = {str(c.get("name")): c for c in data.registry()}
    return OverlayStore(
        base=base, overlays=overlays, mixins=mixins, registry=registry, components=components, files=files
    )


__all__ = ["BASE_NAME", "MIXIN_KIND", "OVERLAY_KIND", "OverlayStore", "load_store", "metadata_paths"]
