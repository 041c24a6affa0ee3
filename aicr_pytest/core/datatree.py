"""The AICR data tree: our embedded ``recipes/`` package, optionally layered under ``--data DIR``.

Layering (as AICR's ``pkg/recipe/provider.go`` does it):

* ``--data DIR`` must be an existing directory that contains ``registry.yaml``.
* ``registry.yaml`` is merged by component ``name``: an external entry replaces the embedded one
  *in place*, new names are appended, embedded order is kept.  ``validators/catalog.yaml`` is
  merged the same way by validator ``name`` (list key ``validators``).
* Every other file at the same relative path in ``DIR`` replaces the embedded file completely
  (values files are never deep-merged across layers).

Every relative path is confined to its root: absolute paths, ``..`` components and symlinks that
resolve outside the root are refused with a :class:`~aicr_pytest.core.errors.UsageError` (exit 2).
Symlinks that stay inside the root are followed (AICR refuses symlinks in ``--data`` altogether
unless allowed; we only refuse the ones that escape).
"""

from __future__ import annotations

import copy
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.inputfile import check_regular
from aicr_pytest.core.resources import bundled_dir

REGISTRY_PATH = "registry.yaml"
CATALOG_PATH = "validators/catalog.yaml"
#: Files merged by ``name`` across layers: relative path → the list key inside the document.
MERGED_BY_NAME: dict[str, str] = {REGISTRY_PATH: "components", CATALOG_PATH: "validators"}
MAX_DATA_FILE_BYTES = 10 << 20

MSG_DATA_DIR_MISSING = "--data {path}: directory not found"
MSG_DATA_DIR_NO_REGISTRY = "--data {path}: registry.yaml not found (an AICR data directory must contain one)"
MSG_PATH_EMPTY = "data path is empty"
MSG_PATH_ABSOLUTE = "data path {path!r} must be relative to the data directory"
MSG_PATH_PARENT = "data path {path!r} must not contain '..'"
MSG_PATH_ESCAPES = "data path {path!r} resolves outside {root} (symlink to {target})"
MSG_PATH_NOT_FOUND = "data file {path!r} not found in {roots}"
MSG_DATA_NOT_A_FILE = "data path {path!r} in {root} is not a regular file"
MSG_DATA_TOO_LARGE = "data file {path} is larger than the {limit} MiB limit"
MSG_DATA_UNREADABLE = "cannot read data file {path}: {error}"
MSG_DATA_MALFORMED = "malformed YAML in data file {path}: {problem}"
MSG_DATA_NOT_MAPPING = "data file {path} is not a YAML mapping"
MSG_DATA_LIST_KEY = "data file {path}: {key!r} must be a list of entries with a name"


def embedded_data_root() -> Path:
    """Directory of our embedded data (the bundled ``recipes/``)."""
    return bundled_dir("recipes")


def _clean_relpath(relpath: str | PurePosixPath) -> PurePosixPath:
    text = str(relpath).replace("\\", "/")
    if not text.strip():
        raise UsageError(MSG_PATH_EMPTY)
    pure = PurePosixPath(text)
    if pure.is_absolute() or (len(text) > 1 and text[1] == ":"):
        raise UsageError(MSG_PATH_ABSOLUTE.format(path=str(relpath)))
    if ".." in pure.parts:
        raise UsageError(MSG_PATH_PARENT.format(path=str(relpath)))
    parts = [p for p in pure.parts if p not in (".", "")]
    if not parts:
        raise UsageError(MSG_PATH_EMPTY)
    return PurePosixPath(*parts)


def _confined(root: Path, rel: PurePosixPath, shown: str) -> Path | None:
    """``root/rel`` if it exists (following symlinks) and stays inside ``root``; else ``None``."""
    candidate = root.joinpath(*rel.parts)
    # Check every component: an intermediate directory symlink can escape too.
    probe = root
    for part in rel.parts:
        probe = probe / part
        if probe.is_symlink():
            target = probe.resolve()
            if not target.is_relative_to(root):
                raise UsageError(MSG_PATH_ESCAPES.format(path=shown, root=root, target=target))
        elif not probe.exists():
            return None
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):  # pragma: no cover - caught per component above
        raise UsageError(MSG_PATH_ESCAPES.format(path=shown, root=root, target=resolved))
    return candidate if resolved.exists() else None


def _read_bytes(path: Path) -> bytes:
    check_regular(path, "--data file")  # a FIFO or a device is never opened (it would hang the run)
    try:
        with path.open("rb") as fh:
            body = fh.read(MAX_DATA_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(MSG_DATA_UNREADABLE.format(path=path, error=exc.strerror or exc)) from None
    if len(body) > MAX_DATA_FILE_BYTES:
        raise UsageError(MSG_DATA_TOO_LARGE.format(path=path, limit=MAX_DATA_FILE_BYTES >> 20))
    return body


def _parse_yaml(path: Path) -> Any:
    try:
        return yamlio.load(_read_bytes(path))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = "; ".join(p for p in (exc.context, exc.problem) if p) or "syntax error"
        problem += where
        raise UsageError(MSG_DATA_MALFORMED.format(path=path, problem=problem)) from None
    except yaml.YAMLError as exc:
        raise UsageError(MSG_DATA_MALFORMED.format(path=path, problem=str(exc).splitlines()[0])) from None


def merge_by_name(base: list[Any], overlay: list[Any]) -> list[Any]:
    """AICR ``mergeByName``: overlay entries replace same-named base entries in place; new ones append."""
    merged = [copy.deepcopy(e) for e in base]
    index = {e.get("name"): i for i, e in enumerate(merged) if isinstance(e, dict)}
    for entry in overlay:
        name = entry.get("name") if isinstance(entry, dict) else None
        if name is not None and name in index:
            merged[index[name]] = copy.deepcopy(entry)
        else:
            if name is not None:
                index[name] = len(merged)
            merged.append(copy.deepcopy(entry))
    return merged


class DataTree:
    """Embedded data with an optional external ``--data`` layer on top."""

    def __init__(self, embedded_root: Path, external_root: Path | None = None) -> None:
        self.embedded_root = embedded_root.resolve()
        self.external_root: Path | None = None
        if external_root is not None:
            ext = Path(external_root).expanduser()
            if not ext.is_dir():
                raise UsageError(MSG_DATA_DIR_MISSING.format(path=external_root))
            ext = ext.resolve()
            check_regular(ext / REGISTRY_PATH, "--data file")
            if not (ext / REGISTRY_PATH).is_file():
                raise UsageError(MSG_DATA_DIR_NO_REGISTRY.format(path=external_root))
            self.external_root = ext

    @classmethod
    def default(cls, external_root: Path | None = None) -> DataTree:
        """The embedded ``recipes`` package, layered under ``external_root`` when given."""
        return cls(embedded_data_root(), external_root)

    @property
    def roots(self) -> list[Path]:
        """Lookup order: external first, then embedded."""
        return [r for r in (self.external_root, self.embedded_root) if r is not None]

    def __repr__(self) -> str:
        return f"DataTree(embedded={self.embedded_root}, external={self.external_root})"

    # -- path resolution --------------------------------------------------------------------

    def find(self, relpath: str | PurePosixPath) -> Path | None:
        """The file at ``relpath`` (external layer first), or ``None``.  Escapes raise."""
        rel = _clean_relpath(relpath)
        for root in self.roots:
            found = _confined(root, rel, str(relpath))
            if found is not None:
                if not found.is_file():
                    raise UsageError(MSG_DATA_NOT_A_FILE.format(path=str(relpath), root=root))
                return found
        return None

    def resolve(self, relpath: str | PurePosixPath) -> Path:
        """Like :meth:`find` but a missing file is a :class:`UsageError`."""
        found = self.find(relpath)
        if found is None:
            roots = " or ".join(str(r) for r in self.roots)
            raise UsageError(MSG_PATH_NOT_FOUND.format(path=str(relpath), roots=roots))
        return found

    def resolve_external(self, relpath: str | PurePosixPath) -> Path | None:
        """``relpath`` inside the ``--data`` directory only (e.g. runtime templates), or ``None``.

        ``None`` when there is no ``--data`` directory or the path does not exist there.  Paths
        that try to leave the directory raise :class:`UsageError` even then.
        """
        rel = _clean_relpath(relpath)
        if self.external_root is None:
            return None
        return _confined(self.external_root, rel, str(relpath))

    # -- reading ----------------------------------------------------------------------------

    def read_bytes(self, relpath: str | PurePosixPath) -> bytes:
        return _read_bytes(self.resolve(relpath))

    def load_yaml(self, relpath: str | PurePosixPath) -> Any:
        """Parse the file at ``relpath``: the top layer's copy, or the by-name merge for
        ``registry.yaml`` and ``validators/catalog.yaml``.  A missing file is a :class:`UsageError`."""
        rel = str(_clean_relpath(relpath))
        if rel in MERGED_BY_NAME:
            self.resolve(rel)  # missing in every layer -> UsageError
            return self.load_merged(rel, MERGED_BY_NAME[rel])
        return _parse_yaml(self.resolve(relpath))

    def load_merged(self, relpath: str, list_key: str) -> dict[str, Any] | None:
        """A document whose ``list_key`` entries merge by ``name`` across layers.

        The embedded document provides the other top-level keys (the external one's win when
        the embedded file is absent).  ``None`` when neither layer has the file.
        """
        rel = _clean_relpath(relpath)
        docs: list[tuple[Path, dict[str, Any]]] = []
        for root in reversed(self.roots):  # embedded first, then external
            found = _confined(root, rel, relpath)
            if found is None:
                continue
            doc = _parse_yaml(found)
            if doc is None:
                doc = {}
            if not isinstance(doc, dict):
                raise UsageError(MSG_DATA_NOT_MAPPING.format(path=found))
            items = doc.get(list_key)
            if items is None:
                items = []
            if not isinstance(items, list):
                raise UsageError(MSG_DATA_LIST_KEY.format(path=found, key=list_key))
            docs.append((found, {**doc, list_key: items}))
        if not docs:
            return None
        merged = copy.deepcopy(docs[0][1])
        for _, doc in docs[1:]:
            merged[list_key] = merge_by_name(merged[list_key], doc[list_key])
        return merged

    def registry(self) -> list[dict[str, Any]]:
        """Merged ``registry.yaml`` components (possibly empty)."""
        doc = self.load_merged(REGISTRY_PATH, MERGED_BY_NAME[REGISTRY_PATH])
        return [c for c in (doc or {}).get("components", []) if isinstance(c, dict)]

    def registry_entry(self, name: str) -> dict[str, Any] | None:
        return next((c for c in self.registry() if c.get("name") == name), None)


__all__ = [
    "CATALOG_PATH",
    "MERGED_BY_NAME",
    "REGISTRY_PATH",
    "DataTree",
    "embedded_data_root",
    "merge_by_name",
]
