"""Today's AICR evidence: recipe-evidence v3 (and v2), minimal redaction v4, per-source pointers.

Two bundles are built here by hand from the shape AICR documents (``pkg/evidence/attestation``
``types.go``/``canonicalize.go``, ``pkg/evidence/redact/redact.go``), not by our emitter: a v3
bundle whose recipe is Go yaml.v3 text (4-space indent) carrying ``metadata.version``, and a
minimal-v4 bundle whose CTRF keeps only AICR's allowlisted ``extra`` keys.  ``evidence verify``
must accept both, and must still fail when the digest was taken the other version's way.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest import cli
from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import emit, manifest, pointer
from aicr_pytest.evidence.canonical import pretty_json, sha256_digest, strip_metadata_version
from aicr_pytest.evidence.predicate import statement_bytes
from aicr_pytest.evidence.settings import MSG_BAD_PREDICATE_VERSION, EvidenceSettings, predicate_version
from tests.evidence import helpers
from tests.evidence.conftest import Registry
from tests.evidence.sigstore_fake import FakeSigstore

IDENTITY = "alice@example.com"
ISSUER = "https://github.com/login/oauth"

#: a recipe as AICR's CanonicalizeRecipeYAML writes it: keys sorted, 4-space indent (yaml.v3)
GO_RECIPE = """\
apiVersion: aicr.run/v1alpha2
criteria:
    accelerator: h100
    intent: training
    service: eks
kind: RecipeResult
metadata:
    appliedOverlays:
        - base
        - eks
    version: v1.3.0
validation:
    deployment:
        checks:
            - check-nvidia-smi
"""
SNAPSHOT = "apiVersion: aicr.run/v1alpha2\nkind: Snapshot\nmeasurements: []\n"
BOM = json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}, indent=2) + "\n"


def aicr_ctrf(tests: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {
        s: sum(t["status"] == s for t in tests) for s in ("passed", "failed", "skipped", "pending", "other")
    }
    return {
        "reportFormat": "CTRF",
        "specVersion": "0.0.1",
        "timestamp": "2026-11-20T10:00:00Z",
        "generatedBy": "aicr",
        "results": {
            "tool": {"name": "aicr", "version": "v1.3.0"},
            "summary": {"tests": len(tests), **counts, "start": 1, "stop": 2},
            "tests": tests,
        },
    }


def aicr_bundle(
    root: Path,
    *,
    predicate_type: str = C.PREDICATE_TYPE_V3,
    recipe: str = GO_RECIPE,
    tests: list[dict[str, Any]] | None = None,
    redaction: dict[str, Any] | None = None,
    profile: dict[str, Any] | None = None,
    digest_of: bytes | None = None,
) -> Path:
    """An unsigned summary bundle in AICR's shape; the recipe digest is v3's unless ``digest_of``."""
    summary = root / C.SUMMARY_DIR
    (summary / C.CTRF_DIR).mkdir(parents=True)
    recipe_bytes = recipe.encode()
    (summary / C.RECIPE_FILE).write_bytes(recipe_bytes)
    (summary / C.SNAPSHOT_FILE).write_text(SNAPSHOT)
    (summary / C.BOM_FILE).write_text(BOM)
    ctrf = aicr_ctrf(
        tests or [{"name": "check-nvidia-smi", "status": "passed", "duration": 5, "suite": ["deployment"]}]
    )
    ctrf_bytes = json.dumps(ctrf, indent=2).encode() + b"\n"
    (summary / C.CTRF_DIR / "deployment.json").write_bytes(ctrf_bytes)
    manifest_bytes = manifest.build(summary)
    (summary / C.MANIFEST_FILE).write_bytes(manifest_bytes)
    if digest_of is None:
        digest_of = (
            strip_metadata_version(recipe_bytes) if predicate_type == C.PREDICATE_TYPE_V3 else recipe_bytes
        )
    recipe_hex = hashlib.sha256(digest_of).hexdigest()
    summary_counts = ctrf["results"]["summary"]
    predicate: dict[str, Any] = {
        "schemaVersion": "1.0.0",
        "attestedAt": "2026-11-20T10:00:00Z",
        "aicrVersion": "v1.3.0",
        "aicrCommit": "0123abc",
        "validatorCatalogVersion": "v1.3.0",
        "validatorImages": [{"image": "ghcr.io/nvidia/aicr-validators/deployment:v1.3.0", "digest": ""}],
        "recipe": {"name": "h100-eks-training", "digest": recipe_hex},
        "fingerprint": {},
        "criteriaMatch": {},
        "phases": {
            "deployment": {
                "passed": summary_counts["passed"],
                "failed": summary_counts["failed"],
                "skipped": summary_counts["skipped"],
                "ctrfDigest": sha256_digest(ctrf_bytes),
            }
        },
        "bom": {
            "format": "CycloneDX",
            "version": "1.6",
            "digest": sha256_digest(BOM.encode()),
            "imageCount": 0,
        },
        "manifest": {"digest": sha256_digest(manifest_bytes), "fileCount": manifest.count(manifest_bytes)},
    }
    if redaction is not None:
        predicate["redaction"] = redaction
    if profile is not None:
        predicate["profile"] = profile
    stmt = statement_bytes("recipe:h100-eks-training", recipe_hex, predicate, predicate_type)
    (summary / C.STATEMENT_FILE).write_bytes(stmt)
    return summary


def verify_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = cli.main(["evidence", "verify", *args, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit"] == code
    return code, doc


def failing(doc: dict[str, Any]) -> str:
    step = next(s for s in doc["steps"] if s["status"] == "failed")
    return str(step["detail"]) + " " + " ".join(f"{r['key']} {r['value']}" for r in step.get("subRows", []))


# ---- the v3 recipe digest ------------------------------------------------------------------------


def test_v3_digest_leaves_out_metadata_version_in_either_indentation() -> None:
    stripped = strip_metadata_version(GO_RECIPE.encode()).decode()
    assert "version: v1.3.0" not in stripped
    assert "metadata:\n    appliedOverlays:\n        - base\n        - eks\nvalidation:" in stripped
    # a metadata holding only the version goes altogether (AICR: same digest as no metadata at all)
    assert strip_metadata_version(b"a: 1\nmetadata:\n  version: dev\nz: 2\n") == b"a: 1\nz: 2\n"
    assert strip_metadata_version(b"a: 1\nz: 2\n") == b"a: 1\nz: 2\n"
    # only the top-level metadata's own key: a nested or differently named one stays
    text = b"metadata:\n  name: x\n  versions: [1]\nspec:\n  version: 2\n"
    assert strip_metadata_version(text) == text


def test_aicr_v3_bundle_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = aicr_bundle(tmp_path / "v3")
    code, doc = verify_json(capsys, str(summary))
    assert code == 0, doc
    assert [s["status"] for s in doc["steps"]] == ["passed", "skipped", "passed", "passed", "informational"]
    assert doc["steps"][2]["detail"].endswith("[recipe-evidence/v3]")
    assert doc["predicate"]["aicrCommit"] == "0123abc"


@pytest.mark.parametrize(
    ("predicate_type", "digest_of"),
    [
        # v3 type over the whole file (v1's way): the recorded digest is not v3's
        (C.PREDICATE_TYPE_V3, GO_RECIPE.encode()),
        # v1 type over the version-less text (v3's way): not v1's
        (C.PREDICATE_TYPE, strip_metadata_version(GO_RECIPE.encode())),
    ],
    ids=["v3-with-v1-digest", "v1-with-v3-digest"],
)
def test_the_recipe_digest_follows_the_recorded_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], predicate_type: str, digest_of: bytes
) -> None:
    summary = aicr_bundle(tmp_path / "b", predicate_type=predicate_type, digest_of=digest_of)
    code, doc = verify_json(capsys, str(summary))
    assert code == 2
    assert "recipe.yaml sha256 does not match predicate.recipe.digest" in failing(doc)


def test_v2_needs_a_profile_and_v1_refuses_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = {"selection": "gpuStack=operator-managed", "policyDescriptorIdentity": "sha256:" + "a" * 64}
    ok = aicr_bundle(tmp_path / "v2", predicate_type=C.PREDICATE_TYPE_V2, profile=profile)
    assert verify_json(capsys, str(ok))[0] == 0
    v3 = aicr_bundle(tmp_path / "v3", profile=profile)
    assert verify_json(capsys, str(v3))[0] == 0
    for name, kind, block, message in [
        ("v2-bare", C.PREDICATE_TYPE_V2, None, "requires the predicate profile block"),
        ("v1-profiled", C.PREDICATE_TYPE, profile, "cannot carry a profile block"),
        (
            "v3-half",
            C.PREDICATE_TYPE_V3,
            {"selection": "a=b"},
            "requires selection and policyDescriptorIdentity",
        ),
    ]:
        summary = aicr_bundle(tmp_path / name, predicate_type=kind, profile=block)
        code, doc = verify_json(capsys, str(summary))
        assert code == 2 and message in failing(doc), name
        assert doc["failureCause"]["class"] == "schema"


def test_unknown_predicate_type_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = aicr_bundle(tmp_path / "v9", predicate_type="https://aicr.run/recipe-evidence/v9")
    code, doc = verify_json(capsys, str(summary))
    assert code == 2 and "predicateType is 'https://aicr.run/recipe-evidence/v9'" in failing(doc)


# ---- minimal redaction v4 ------------------------------------------------------------------------


def test_aicr_minimal_v4_bundle_verifies_and_says_its_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = [  # message and stdout blanked; extra keeps only allowlisted keys with valid values
        {
            "name": "check-nvidia-smi",
            "status": "skipped",
            "duration": 1,
            "suite": ["deployment"],
            "extra": {"skipReason": "nodes-busy"},
        },
        {
            "name": "operator-health",
            "status": "skipped",
            "duration": 0,
            "suite": ["deployment"],
            "extra": {"skipReason": "named-in-skip-checks"},
        },
        {
            "name": "expected-resources",
            "status": "passed",
            "duration": 3,
            "suite": ["deployment"],
            "extra": {"nodesValidated": "2", "nodesTotal": "2"},
        },
    ]
    redaction = {
        "policy": "minimal",
        "version": "v4",
        "applied": [
            "ctrf.tests.omit:message",
            "ctrf.tests.omit:stdout",
            "snapshot.header.allowlist",
            "snapshot.measurements.allowlist",
        ],
    }
    summary = aicr_bundle(tmp_path / "v4", tests=tests, redaction=redaction)
    code, doc = verify_json(capsys, str(summary))
    assert code == 0, doc
    assert doc["predicate"]["redaction"]["version"] == "v4"
    code = cli.main(["evidence", "verify", str(summary)])
    text = capsys.readouterr().out
    assert code == 0 and "Policy **minimal** (version v4)" in text
    assert "- `ctrf.tests.omit:stdout`" in text


# ---- emission --------------------------------------------------------------------------------------


def emitted(out: Path, *, version: int, push: str | None = None, token: str | None = None) -> emit.Emitted:
    return helpers.emitted(out, push=push, token=token, predicate_version=version)


def test_emission_stays_v1_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1 = emitted(tmp_path / "v1", version=1)
    v3 = emitted(tmp_path / "v3", version=3)
    recipe = (v1.summary_dir / C.RECIPE_FILE).read_bytes()
    assert recipe == (v3.summary_dir / C.RECIPE_FILE).read_bytes()  # the same file either way
    assert b"version: dev" in recipe
    for em, kind, digest_of in [
        (v1, C.PREDICATE_TYPE, recipe),
        (v3, C.PREDICATE_TYPE_V3, strip_metadata_version(recipe)),
    ]:
        stmt = json.loads((em.summary_dir / C.STATEMENT_FILE).read_bytes())
        assert stmt["predicateType"] == kind
        assert stmt["predicate"]["recipe"]["digest"] == hashlib.sha256(digest_of).hexdigest()
        assert (
            yaml.safe_load(em.pointer_path.read_text())["attestations"][0]["bundle"]["predicateType"] == kind
        )
        assert verify_json(capsys, str(em.pointer_path.parent))[0] == 0


@pytest.mark.parametrize("value", ["2", "4", "x", "03", " 3", "v"])
def test_bad_predicate_version_is_one_usage_line(value: str) -> None:
    with pytest.raises(UsageError) as err:
        predicate_version(value)
    assert str(err.value) == MSG_BAD_PREDICATE_VERSION.format(value=value)
    assert predicate_version("3") == predicate_version("v3") == 3 and predicate_version(None) == 1
    # like the other evidence flags, it does nothing without --emit-attestation, and says so
    assert EvidenceSettings(predicate_version=3).given_without_emit == ["--predicate-version"]
    assert EvidenceSettings().given_without_emit == []


# ---- pointers: profile and the per-source layout ----------------------------------------------------


def test_pointer_profile_and_type_coherence(tmp_path: Path) -> None:
    base = yaml.safe_load(pointer.build("r", helpers.NOW).render())

    def load(**changes: Any) -> pointer.Pointer:
        doc = json.loads(json.dumps(base, default=str))
        kind = changes.pop("predicateType", None)
        if kind:
            doc["attestations"][0]["bundle"]["predicateType"] = kind
        doc.update(changes)
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump(doc))
        return pointer.load(path)

    assert load(profile="gpuStack=operator-managed", predicateType=C.PREDICATE_TYPE_V3).profile
    assert load(profile="gpuStack=operator-managed", predicateType=C.PREDICATE_TYPE_V2).profile
    with pytest.raises(UsageError, match=re.escape(f"references {C.PREDICATE_TYPE_V2} evidence without")):
        load(predicateType=C.PREDICATE_TYPE_V2)
    with pytest.raises(UsageError, match=r"records a profile selection but references .*v1 evidence"):
        load(profile="a=b")
    rendered = load(profile="a=b", predicateType=C.PREDICATE_TYPE_V3).render().decode()
    assert rendered.index("profile: a=b") < rendered.index("recipe: r")  # sorted keys, like AICR


def test_per_source_pointer_layout(
    registry: Registry, fake_sigstore: FakeSigstore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    em = emitted(tmp_path / "out", version=3, push=registry.repo(), token=fake_sigstore.token(IDENTITY))
    assert em.signed
    repo = tmp_path / "repo"
    committed = repo / em.copy_to
    committed.parent.mkdir(parents=True)
    shutil.copy(em.pointer_path, committed)
    code, doc = verify_json(capsys, str(committed), "--registry-plain-http")
    assert code == 0, doc
    assert doc["steps"][2]["detail"].endswith("[recipe-evidence/v3]")

    recipe, source, name = committed.parts[-3:]
    for where, message in [
        (f"other-recipe/{source}/{name}", "does not match the recipe directory other-recipe"),
        (f"{recipe}/{'0' * 32}/{name}", f"but the pointer is committed under {'0' * 32}"),
        (f"{recipe}/{source}/sha256-{'0' * 64}.yaml", "the file is not named after the bundle digest"),
    ]:
        moved = repo / "recipes" / "evidence" / where
        moved.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(em.pointer_path, moved)
        code, doc = verify_json(capsys, str(moved), "--registry-plain-http")
        assert code == 2 and message in failing(doc), where
        assert doc["steps"][0]["name"] == "materialize-bundle"

    unsigned = emitted(tmp_path / "unsigned", version=1)
    moved = repo / "recipes" / "evidence" / recipe / source / "unsigned.yaml"
    shutil.copy(unsigned.pointer_path, moved)
    code, doc = verify_json(capsys, str(moved))
    assert code == 2 and "must be signed" in failing(doc)


def test_pointer_type_must_match_the_bundle(
    registry: Registry, fake_sigstore: FakeSigstore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    em = emitted(tmp_path / "out", version=3, push=registry.repo(), token=fake_sigstore.token(IDENTITY))
    doc = yaml.safe_load(em.pointer_path.read_text())
    doc["attestations"][0]["bundle"]["predicateType"] = C.PREDICATE_TYPE
    forged = tmp_path / "forged.yaml"
    forged.write_text(yaml.safe_dump(json.loads(json.dumps(doc, default=str))))
    code, result = verify_json(capsys, str(forged), "--registry-plain-http")
    assert code == 2
    assert "pointer names predicateType https://aicr.run/recipe-evidence/v1" in failing(result)


def test_pretty_json_is_what_the_ctrf_files_use() -> None:
    # the hand-built CTRF above is 2-space JSON + newline: the same bytes our pretty_json writes
    doc = aicr_ctrf([])
    assert pretty_json(doc) == json.dumps(doc, indent=2).encode() + b"\n"
