"""The recipe-evidence/v1 predicate and the two in-toto Statements that carry it.

* ``statement.intoto.json`` (unsigned, in the bundle): subject ``recipe:<name>`` with the recipe
  digest (bare hex).
* the signed Statement (DSSE payload of the Sigstore bundle): subject ``<registry>/<repo>:<tag>``
  with the pushed artifact's OCI manifest digest.

Both are compact JSON with keys ``_type, subject, predicateType, predicate`` and the predicate's keys
sorted recursively; counts stay JSON integers (Go's ``encoding/json`` cannot read ``12.0`` into an
``int``, which is why in-toto-attestation's protobuf serializer is not used).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence.canonical import compact_json, is_hex64, sort_keys


def statement_bytes(subject_name: str, subject_hex: str, predicate: dict[str, Any]) -> bytes:
    if not is_hex64(subject_hex):
        raise ValueError(f"subject digest must be 64 lowercase hex characters, got {subject_hex!r}")
    doc = {
        "_type": C.STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": subject_hex}}],
        "predicateType": C.PREDICATE_TYPE,
        "predicate": sort_keys(predicate),
    }
    return compact_json(doc)


# ---- parsing (verify side: lenient about unknown fields, strict about what it relies on) -------


def _count(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Count = Annotated[int, BeforeValidator(_count), Field(ge=0)]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class RecipeRef(_Lenient):
    name: str = ""
    digest: str = ""


class PhaseSummary(_Lenient):
    passed: Count = 0
    failed: Count = 0
    skipped: Count = 0
    other: Count = 0
    ctrf_digest: str = Field(default="", alias="ctrfDigest")


class BomInfo(_Lenient):
    format: str = ""
    version: str = ""
    digest: str = ""
    image_count: Count = Field(default=0, alias="imageCount")


class ManifestInfo(_Lenient):
    digest: str = ""
    file_count: Count = Field(default=0, alias="fileCount")


class Redaction(_Lenient):
    policy: str = ""
    version: str = ""
    applied: list[str] = Field(default_factory=list)


class Predicate(_Lenient):
    schema_version: str = Field(default="", alias="schemaVersion")
    attested_at: str = Field(default="", alias="attestedAt")
    aicr_version: str = Field(default="", alias="aicrVersion")
    recipe: RecipeRef = Field(default_factory=RecipeRef)
    fingerprint: dict[str, Any] = Field(default_factory=dict)
    criteria_match: dict[str, Any] = Field(default_factory=dict, alias="criteriaMatch")
    phases: dict[str, PhaseSummary] = Field(default_factory=dict)
    bom: BomInfo = Field(default_factory=BomInfo)
    manifest: ManifestInfo = Field(default_factory=ManifestInfo)
    redaction: Redaction | None = None


class StatementError(ValueError):
    """The bytes are not a recipe-evidence/v1 in-toto Statement."""


def parse_statement(raw: bytes) -> tuple[dict[str, Any], Predicate]:
    """The Statement document and its parsed predicate; :class:`StatementError` otherwise."""
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise StatementError(f"statement is not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise StatementError("statement is not a JSON object")
    if doc.get("_type") != C.STATEMENT_TYPE:
        raise StatementError(f"statement _type is {doc.get('_type')!r}, want {C.STATEMENT_TYPE}")
    if doc.get("predicateType") != C.PREDICATE_TYPE:
        raise StatementError(f"predicateType is {doc.get('predicateType')!r}, want {C.PREDICATE_TYPE}")
    subjects = doc.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise StatementError("statement has no subject")
    for subject in subjects:
        digest = subject.get("digest") if isinstance(subject, dict) else None
        if not isinstance(digest, dict) or not is_hex64(digest.get("sha256")):
            raise StatementError("statement subject has no sha256 digest of 64 hex characters")
    raw_predicate = doc.get("predicate")
    if not isinstance(raw_predicate, dict):
        raise StatementError("statement has no predicate object")
    try:
        predicate = Predicate.model_validate(raw_predicate)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise StatementError(f"predicate.{where}: {first['msg']}") from None
    return doc, predicate
