"""Writing ``<out>/summary-bundle/``: recipe, snapshot, BOM, per-phase CTRF, manifest, statement.

The directory is cleared first (stale files of an earlier run would otherwise be inventoried), every
file is scrubbed of the run's secret values before it is written, and the manifest and predicate
are computed from the bytes on disk.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aicr_pytest.core.recipe import Recipe
from aicr_pytest.core.snapshot import Snapshot
from aicr_pytest.evidence import bom as bom_mod
from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import fingerprint, manifest, redact
from aicr_pytest.evidence.canonical import (
    dump_yaml,
    format_time,
    pretty_json,
    recipe_digest_for_type,
    sha256_digest,
    sha256_hex,
)
from aicr_pytest.evidence.predicate import statement_bytes

REDACTED = b"[REDACTED]"
#: values shorter than this are not scrubbed (they would match innocent text)
MIN_SECRET_LEN = 8


@dataclass
class BundleInputs:
    recipe: Recipe
    snapshot: Snapshot | None
    report: Mapping[str, Any]
    tool_version: str
    full: bool = False
    user_bom: bytes | None = None
    registry_entries: Sequence[Mapping[str, Any]] = ()
    secrets: Sequence[str] = ()
    now: datetime | None = None
    #: the Statement's predicateType; v3 also changes how the recipe digest is taken
    predicate_type: str = C.PREDICATE_TYPE


@dataclass
class BuiltBundle:
    out_dir: Path
    summary_dir: Path
    recipe_name: str
    recipe_digest: str  # bare hex
    manifest_digest: str  # sha256:<hex>
    predicate: dict[str, Any]
    statement: bytes
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    predicate_type: str = C.PREDICATE_TYPE


def _secrets(secrets: Sequence[str]) -> list[str]:
    return [s for s in secrets if s and len(s) >= MIN_SECRET_LEN]


def scrub_data(value: Any, secrets: Sequence[str]) -> Any:
    """A copy of a document with every secret replaced in every string (keys included)."""
    if isinstance(value, str):
        for secret in _secrets(secrets):
            value = value.replace(secret, REDACTED.decode())
        return value
    if isinstance(value, dict):
        return {scrub_data(k, secrets): scrub_data(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_data(v, secrets) for v in value]
    return value


def scrub(data: bytes, secrets: Sequence[str]) -> bytes:
    """Last line of defence on the serialized bytes (documents are scrubbed before serializing)."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_LEN:
            data = data.replace(secret.encode("utf-8"), REDACTED)
    return data


def recipe_document(recipe: Recipe) -> dict[str, Any]:
    """The resolved recipe with fields at their defaults left out (like Go's ``omitempty``)."""
    doc: dict[str, Any] = recipe.model_dump(by_alias=True, exclude_defaults=True, mode="json")
    return doc


def canonical_recipe(recipe: Recipe) -> bytes:
    """``recipe.yaml``: the resolved recipe, keys sorted."""
    return dump_yaml(recipe_document(recipe))


def recipe_digest(recipe: Recipe) -> str:
    return sha256_hex(canonical_recipe(recipe))


def snapshot_document(snapshot: Snapshot | None) -> dict[str, Any]:
    """The raw snapshot as a plain document (empty ``context``/``items`` left out)."""
    if snapshot is None:
        return {"measurements": []}
    doc = snapshot.model_dump(by_alias=True, exclude_none=True, mode="json")
    for measurement in doc.get("measurements", []):
        for sub in measurement.get("subtypes", []):
            for key in ("context", "items"):
                if not sub.get(key):
                    sub.pop(key, None)
    if not doc.get("metadata"):
        doc.pop("metadata", None)
    return doc


def _prepare_dir(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = out_dir / C.SUMMARY_DIR
    if summary.is_symlink():
        raise OSError(f"{summary} is a symbolic link; refusing to write a bundle through it")
    if summary.exists():
        shutil.rmtree(summary)
    summary.mkdir()
    return summary


def build(out_dir: Path, inputs: BundleInputs) -> BuiltBundle:
    """Write the summary bundle and return what the pointer and the push need."""
    summary = _prepare_dir(out_dir)
    secrets = list(inputs.secrets)

    def write(rel: str, data: bytes) -> bytes:
        data = scrub(data, secrets)
        target = summary / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return data

    recipe_name = inputs.recipe.display_name
    recipe_doc = scrub_data(recipe_document(inputs.recipe), secrets)
    recipe_bytes = write(C.RECIPE_FILE, dump_yaml(recipe_doc))
    r_digest = recipe_digest_for_type(recipe_bytes, inputs.predicate_type)

    raw_snapshot = scrub_data(snapshot_document(inputs.snapshot), secrets)
    applied: list[str] = []
    if inputs.full:
        snap_doc = raw_snapshot
    else:
        snap_doc, rules = redact.minimize_snapshot(raw_snapshot)
        applied.extend(rules)
    write(C.SNAPSHOT_FILE, dump_yaml(snap_doc))

    if inputs.user_bom is not None:
        bom_bytes = write(C.BOM_FILE, inputs.user_bom)
    else:
        auto = bom_mod.build_auto_bom(
            inputs.recipe, recipe_name, inputs.tool_version, inputs.snapshot, inputs.registry_entries
        )
        bom_bytes = write(C.BOM_FILE, auto)

    phases: dict[str, dict[str, Any]] = {}
    per_phase = redact.split_ctrf_by_phase(scrub_data(inputs.report, secrets), C.PHASES)
    for phase, doc in per_phase.items():
        if not inputs.full:
            doc = redact.minimize_ctrf(doc)
        data = write(f"{C.CTRF_DIR}/{phase}.json", pretty_json(doc))
        counts = doc["results"]["summary"]
        phases[phase] = {
            "passed": int(counts.get("passed", 0)),
            "failed": int(counts.get("failed", 0)),
            "skipped": int(counts.get("skipped", 0)),
            "other": int(counts.get("other", 0)),
            "ctrfDigest": sha256_digest(data),
        }
    if per_phase and not inputs.full:
        applied.extend(redact.CTRF_RULES)

    manifest_bytes = manifest.build(summary)
    (summary / C.MANIFEST_FILE).write_bytes(manifest_bytes)
    m_digest = sha256_digest(manifest_bytes)

    now = inputs.now or datetime.now(UTC)
    fp = fingerprint.compute(inputs.snapshot)
    predicate: dict[str, Any] = {
        "schemaVersion": C.SCHEMA_VERSION,
        "attestedAt": format_time(now),
        "aicrVersion": f"aicr-pytest {inputs.tool_version}",
        "validatorCatalogVersion": "",
        "validatorImages": None,
        "recipe": {"name": recipe_name, "digest": r_digest},
        "fingerprint": fp,
        "criteriaMatch": fingerprint.criteria_match(inputs.recipe.criteria, fp),
        "phases": phases,
        "bom": {
            "format": bom_mod.BOM_FORMAT,
            "version": bom_mod.BOM_VERSION,
            "digest": sha256_digest(bom_bytes),
            "imageCount": bom_mod.component_count(bom_bytes),
        },
        "manifest": {"digest": m_digest, "fileCount": manifest.count(manifest_bytes)},
    }
    if not inputs.full:
        predicate["redaction"] = {
            "policy": redact.POLICY,
            "version": redact.POLICY_VERSION,
            "applied": sorted(set(applied)),
        }
    stmt = statement_bytes(f"recipe:{recipe_name}", r_digest, predicate, inputs.predicate_type)
    stmt = scrub(stmt, secrets)
    (summary / C.STATEMENT_FILE).write_bytes(stmt)
    return BuiltBundle(
        out_dir=out_dir,
        summary_dir=summary,
        recipe_name=recipe_name,
        recipe_digest=r_digest,
        manifest_digest=m_digest,
        predicate=predicate,
        statement=stmt,
        phases=phases,
        predicate_type=inputs.predicate_type,
    )
