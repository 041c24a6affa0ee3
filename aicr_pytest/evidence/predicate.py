"""The recipe-evidence predicate (v1, and AICR's v2/v3) and the two in-toto Statements that carry it.

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


def statement_bytes(
    subject_name: str, subject_hex: str, predicate: dict[str, Any], predicate_type: str = C.PREDICATE_TYPE
) -> bytes:
    if not is_hex64(subject_hex):
        raise ValueError(f"subject digest must be 64 lowercase hex characters, got {subject_hex!r}")
    doc = {
        "_type": C.STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": subject_hex}}],
        "predicateType": predicate_type,
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


class Profile(_Lenient):
    """A profiled recipe's block (AICR's v2 requires it, v1 forbids it, v3 allows either)."""

    selection: str = ""
    advertiser: str = ""
    policy_descriptor_identity: str = Field(default="", alias="policyDescriptorIdentity")


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
    profile: Profile | None = None
    #: the Statement's ``predicateType`` (set by :func:`parse_statement`, not read from the predicate)
    predicate_type: str = Field(default=C.PREDICATE_TYPE, exclude=True)


def type_problem(predicate_type: str, profile: Profile | None) -> str | None:
    """Why a predicate of this type cannot carry (or lack) this profile block; ``None``: coherent."""
    if predicate_type not in C.PREDICATE_TYPES:
        return f"predicateType is {predicate_type!r}, want one of {', '.join(C.PREDICATE_TYPES)}"
    if predicate_type == C.PREDICATE_TYPE and profile is not None:
        return f"predicateType {C.PREDICATE_TYPE} cannot carry a profile block"
    if predicate_type == C.PREDICATE_TYPE_V2 and profile is None:
        return f"predicateType {C.PREDICATE_TYPE_V2} requires the predicate profile block"
    if profile is not None and not (profile.selection and profile.policy_descriptor_identity):
        return "predicate profile block requires selection and policyDescriptorIdentity"
    return None


class StatementError(ValueError):
    """The bytes are not a recipe-evidence in-toto Statement (v1, v2 or v3)."""


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
    predicate_type = doc.get("predicateType")
    if predicate_type not in C.PREDICATE_TYPES:
        want = ", ".join(C.PREDICATE_TYPES)
        raise StatementError(f"predicateType is {predicate_type!r}, want one of {want}")
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
    predicate = predicate.model_copy(update={"predicate_type": predicate_type})
    problem = type_problem(predicate.predicate_type, predicate.profile)
    if problem is not None:
        raise StatementError(problem)
    return doc, predicate
