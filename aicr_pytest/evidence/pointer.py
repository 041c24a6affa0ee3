"""``pointer.yaml``: the locator a contributor commits under ``recipes/evidence/``.

Schema 1.0.0 with exactly one attestation::

    attestations:
      - attestedAt: 2026-06-30T22:17:15Z
        bundle: {digest: sha256:<hex>, oci: <registry>/<repo>:<tag>, predicateType: <v1 URI>}
        signer: {identity: <SAN>, issuer: <OIDC issuer>, rekorLogIndex: <n>}   # omitted when unsigned
    recipe: <recipe name>
    schemaVersion: 1.0.0

Rendered with sorted keys (byte-identical to AICR's); unsigned local pointers carry ``""`` for
``bundle.oci`` and ``bundle.digest``.  Read as today's AICR writes them too: ``predicateType`` v1,
v2 or v3, and an optional ``profile`` (the recipe's profile selection; AICR's legacy types tie it
to v2).  A pointer committed at ``recipes/evidence/<recipe>/<source>/<digest>.yaml`` must sit where
its content says (:func:`layout_problem`).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence.canonical import dump_yaml, is_sha256_digest, parse_time


def _time(value: object) -> datetime:
    return parse_time(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Signer(_Strict):
    identity: str = Field(min_length=1)
    issuer: str = Field(min_length=1)
    rekor_log_index: int | None = Field(default=None, alias="rekorLogIndex", ge=0)


class BundleRef(_Strict):
    digest: str = ""
    oci: str = ""
    predicate_type: str = Field(alias="predicateType")

    @field_validator("predicate_type")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in C.PREDICATE_TYPES:
            raise ValueError(f"must be one of {', '.join(C.PREDICATE_TYPES)}")
        return v

    @field_validator("digest")
    @classmethod
    def _digest(cls, v: str) -> str:
        if v and not is_sha256_digest(v):
            raise ValueError("must be sha256: followed by 64 lowercase hex characters")
        return v


class Attestation(_Strict):
    attested_at: Annotated[datetime, BeforeValidator(_time)] = Field(alias="attestedAt")
    bundle: BundleRef
    signer: Signer | None = None


class Pointer(_Strict):
    schema_version: str = Field(alias="schemaVersion")
    recipe: str = Field(min_length=1)
    profile: str = ""
    attestations: list[Attestation]

    @field_validator("schema_version")
    @classmethod
    def _schema(cls, v: str) -> str:
        if v != "1.0" and not re.fullmatch(r"1\.0\.\d+", v):
            raise ValueError("unsupported schemaVersion (want 1.0 or 1.0.x)")
        return v

    @field_validator("attestations")
    @classmethod
    def _one(cls, v: list[Attestation]) -> list[Attestation]:
        if not v:
            raise ValueError("no attestation (exactly one is required)")
        if len(v) > 1:
            raise ValueError("more than one attestation: schema 2.0 not yet supported")
        a = v[0]
        if a.bundle.oci and not a.bundle.digest:
            raise ValueError("bundle.oci is set but bundle.digest is empty (want sha256:<hex>)")
        return v

    @model_validator(mode="after")
    def _profile_type(self) -> Pointer:
        """AICR's legacy types say whether there is a profile (v2) or not (v1); v3 allows either."""
        kind = self.attestations[0].bundle.predicate_type
        if kind == C.PREDICATE_TYPE and self.profile:
            raise ValueError(f"pointer records a profile selection but references {kind} evidence")
        if kind == C.PREDICATE_TYPE_V2 and not self.profile:
            raise ValueError(f"pointer references {kind} evidence without a profile selection")
        return self

    @property
    def attestation(self) -> Attestation:
        return self.attestations[0]

    def to_document(self) -> dict[str, Any]:
        a = self.attestation
        entry: dict[str, Any] = {
            "attestedAt": a.attested_at,
            "bundle": {
                "digest": a.bundle.digest,
                "oci": a.bundle.oci,
                "predicateType": a.bundle.predicate_type,
            },
        }
        if a.signer is not None:
            signer: dict[str, Any] = {"identity": a.signer.identity, "issuer": a.signer.issuer}
            if a.signer.rekor_log_index:
                signer["rekorLogIndex"] = a.signer.rekor_log_index
            entry["signer"] = signer
        doc: dict[str, Any] = {"attestations": [entry], "recipe": self.recipe}
        if self.profile:
            doc["profile"] = self.profile
        doc["schemaVersion"] = self.schema_version
        return doc

    def render(self) -> bytes:
        return dump_yaml(self.to_document())


def build(
    recipe: str,
    attested_at: datetime,
    *,
    oci: str = "",
    digest: str = "",
    identity: str = "",
    issuer: str = "",
    rekor_log_index: int = 0,
    predicate_type: str = C.PREDICATE_TYPE,
) -> Pointer:
    signer = None
    if identity or issuer:
        signer = Signer(identity=identity, issuer=issuer, rekorLogIndex=rekor_log_index or None)
    return Pointer(
        schemaVersion=C.POINTER_SCHEMA_VERSION,
        recipe=recipe,
        attestations=[
            Attestation(
                attestedAt=attested_at,
                bundle=BundleRef(digest=digest, oci=oci, predicateType=predicate_type),
                signer=signer,
            )
        ],
    )


def _one_line(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "pointer"
    msg = first["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}"


def parse(data: object, source: str) -> Pointer:
    if not isinstance(data, dict):
        raise UsageError(f"pointer {source}: not a YAML mapping")
    try:
        return Pointer.model_validate(data)
    except ValidationError as err:
        raise UsageError(f"pointer {source}: {_one_line(err)}") from None


def load(path: Path) -> Pointer:
    """Read and validate a pointer file; :class:`UsageError` with one line otherwise."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(C.MAX_POINTER + 1)
    except OSError as err:
        raise UsageError(f"pointer {path}: {err.strerror or err}") from None
    if len(raw) > C.MAX_POINTER:
        raise UsageError(f"pointer {path}: larger than {C.MAX_POINTER >> 20} MiB")
    try:
        data = yamlio.load_with(raw, yaml.SafeLoader)
    except yaml.YAMLError as err:
        raise UsageError(f"pointer {path}: invalid YAML: {' '.join(str(err).split())}") from None
    return parse(data, str(path))


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".pointer-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def source_slug(issuer: str, identity: str) -> str:
    """First 32 hex of sha256(issuer + "\\n" + identity): the committed path's ``<src>``."""
    if not issuer or not identity:
        raise ValueError("source slug needs both an issuer and an identity")
    return hashlib.sha256(f"{issuer}\n{identity}".encode()).hexdigest()[:32]


def _local_segment(name: str) -> bool:
    return (
        bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\x00" not in name
    )


PENDING_HINT = "(sign and push the bundle, then commit under recipes/evidence/{recipe}/<source>/)"


def copy_to(p: Pointer) -> str:
    """Where to commit the pointer: ``recipes/evidence/<recipe>/<src>/<digest ':'→'-'>.yaml``."""
    a = p.attestation
    if not _local_segment(p.recipe):
        raise ValueError(f"recipe name {p.recipe!r} is not a single path segment")
    if a.signer is None or not a.bundle.digest:
        return PENDING_HINT.format(recipe=p.recipe)
    if not is_sha256_digest(a.bundle.digest):
        raise ValueError(f"bundle digest {a.bundle.digest!r} is not sha256:<64 hex>")
    src = source_slug(a.signer.issuer, a.signer.identity)
    return f"recipes/evidence/{p.recipe}/{src}/{a.bundle.digest.replace(':', '-')}.yaml"


def layout_problem(path: Path, p: Pointer) -> str | None:
    """Why a pointer under ``recipes/evidence/<recipe>/<source>/`` is not where its content puts it
    (``None``: it is, or it lies elsewhere).

    The layout AICR documents: ``<recipe>`` is ``pointer.recipe``, ``<source>`` is the signer's
    :func:`source_slug` (so one party cannot write under another's directory; such a pointer must
    be signed) and the file is named after the bundle digest, ``:`` written ``-``.
    """
    parts = path.absolute().parts
    if len(parts) < 5 or parts[-5:-3] != ("recipes", "evidence"):
        return None
    recipe_dir, source, name = parts[-3], parts[-2], parts[-1]
    where = f"recipes/evidence/{recipe_dir}/{source}/{name}"
    a = p.attestation
    if p.recipe != recipe_dir:
        return f"{where}: pointer.recipe {p.recipe} does not match the recipe directory {recipe_dir}"
    if a.signer is None:
        return f"{where}: a pointer under recipes/evidence/<recipe>/<source>/ must be signed (no signer)"
    want = source_slug(a.signer.issuer, a.signer.identity)
    if source != want:
        return (
            f"{where}: signer {a.signer.identity} maps to source {want}, "
            f"but the pointer is committed under {source}"
        )
    if not a.bundle.digest or name != a.bundle.digest.replace(":", "-") + ".yaml":
        want_name = a.bundle.digest.replace(":", "-") + ".yaml" if a.bundle.digest else "<bundle digest>.yaml"
        return f"{where}: the file is not named after the bundle digest (want {want_name})"
    return None
