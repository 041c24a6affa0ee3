"""AICR's committed evidence pointers (read in place from ../shared/reference) load, validate and
re-render byte for byte, and sit at the path their own fields derive."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import pointer
from aicr_pytest.evidence.canonical import is_sha256_digest

pytestmark = pytest.mark.compat


def _pointers(reference_dir: Path) -> list[Path]:
    root = reference_dir / "aicr" / "recipes" / "evidence"
    found = sorted(p for p in root.rglob("*.yaml") if p.name != "allowlist.yaml")
    assert len(found) >= 5, f"expected AICR's committed pointers under {root}"
    return found


def test_every_reference_pointer_loads_and_validates(reference_dir: Path) -> None:
    root = reference_dir / "aicr"
    for path in _pointers(reference_dir):
        p = pointer.load(path)
        a = p.attestation
        rel = path.relative_to(root).as_posix()
        recipe_dir, src_dir, file_name = path.parent.parent.name, path.parent.name, path.name
        assert p.schema_version == "1.0.0"
        assert p.recipe == recipe_dir, rel
        assert a.bundle.predicate_type == C.PREDICATE_TYPE
        assert is_sha256_digest(a.bundle.digest), rel
        assert file_name == a.bundle.digest.replace(":", "-") + ".yaml"
        assert a.bundle.oci.startswith("ghcr.io/") and ":" in a.bundle.oci.split("/", 1)[1]
        assert a.signer is not None and a.signer.rekor_log_index and a.signer.rekor_log_index > 0
        assert pointer.source_slug(a.signer.issuer, a.signer.identity) == src_dir, rel
        assert a.attested_at.tzinfo is not None
        assert pointer.copy_to(p) == rel
        assert p.render() == path.read_bytes(), f"{rel} does not re-render byte for byte"


def test_reference_pointer_tags_are_derived_tags(reference_dir: Path) -> None:
    """Their tags follow <recipe-slug>-<12 hex>; the digest part is the manifest digest, not shown here."""
    for path in _pointers(reference_dir):
        p = pointer.load(path)
        tag = p.attestation.bundle.oci.rsplit(":", 1)[1]
        prefix, _, hexpart = tag.rpartition("-")
        assert prefix == p.recipe and len(hexpart) == 12 and all(c in "0123456789abcdef" for c in hexpart)
