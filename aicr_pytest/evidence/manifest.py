"""``manifest.json``: the sha256 inventory of a bundle's payload files, and its check on verify."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence.canonical import pretty_json

_MEDIA_TYPES = (
    (".cdx.json", "application/vnd.cyclonedx+json"),
    (".intoto.jsonl", "application/vnd.in-toto+jsonl"),
    (".json", "application/json"),
    (".yaml", "application/yaml"),
    (".yml", "application/yaml"),
    (".log", "text/plain"),
)


def media_type(path: str) -> str | None:
    for suffix, mt in _MEDIA_TYPES:
        if path.endswith(suffix):
            return mt
    return None


def payload_files(root: Path) -> list[str]:
    """Bundle-relative ``/`` paths of every file (and link) except the excluded three, byte-sorted."""
    out: list[str] = []
    for path in root.rglob("*"):
        if not path.is_symlink() and not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel in C.MANIFEST_EXCLUDED:
            continue
        out.append(rel)
    return sorted(out, key=lambda p: p.encode("utf-8"))


def build(root: Path) -> bytes:
    """The manifest bytes for the files now under ``root``."""
    files: list[dict[str, Any]] = []
    for rel in payload_files(root):
        if (root / rel).is_symlink():
            raise ValueError(f"{rel} is a symbolic link; a bundle holds regular files only")
        data = (root / rel).read_bytes()
        entry: dict[str, Any] = {
            "path": rel,
            "size": len(data),
            "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
        }
        mt = media_type(rel)
        if mt:
            entry["mediaType"] = mt
        files.append(entry)
    return pretty_json({"schemaVersion": C.MANIFEST_SCHEMA_VERSION, "files": files})


def count(manifest_bytes: bytes) -> int:
    files = json.loads(manifest_bytes)["files"]
    return len(files)


@dataclass(frozen=True)
class Problem:
    """One finding of the inventory check: ``key`` is the file, ``value`` what is wrong."""

    key: str
    value: str


def _is_local(path: str) -> bool:
    if not path or "\\" in path or "\x00" in path:
        return False
    p = PurePosixPath(path)
    return not p.is_absolute() and ".." not in p.parts and p.parts[:1] != ("",) and str(p) == path


def schema_ok(version: object) -> bool:
    return isinstance(version, str) and (version == "1.0" or version.startswith("1.0."))


def check_files(root: Path, manifest: dict[str, Any]) -> list[Problem]:
    """Every listed file present with the recorded size and sha256; no unlisted payload file."""
    problems: list[Problem] = []
    listed: set[str] = set()
    for entry in manifest.get("files") or ():
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not _is_local(path):
            problems.append(
                Problem(str(path), "manifest entry is not a local path (rejecting potential traversal)")
            )
            continue
        listed.add(path)
        target = root / path
        if not target.resolve().is_relative_to(root.resolve()):
            problems.append(
                Problem(path, f"{path} resolves outside the bundle (rejecting potential traversal)")
            )
            continue
        if target.is_symlink():
            problems.append(Problem(path, f"{path} is a symbolic link, not a file"))
            continue
        if not target.exists():
            problems.append(Problem(path, f"file missing from bundle: {path}"))
            continue
        if target.is_dir():
            problems.append(Problem(path, f"{path} is a directory, not a file"))
            continue
        data = target.read_bytes()
        size = entry.get("size")
        if isinstance(size, int) and size > 0 and size != len(data):
            problems.append(Problem(path, f"size mismatch for {path} (got {len(data)}, want {size})"))
            continue
        want = str(entry.get("sha256", "")).removeprefix("sha256:")
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            problems.append(Problem(path, f"sha256 mismatch (got {got}, want {want})"))
    for rel in payload_files(root):
        if rel not in listed:
            problems.append(Problem(rel, "file not in manifest.json (unsigned)"))
    return problems
