"""``aicr-pytest evidence verify``: the five steps, the tamper demo and the exit codes (0/1/2, the
JSON ``exit`` field always the same number as the process exit code)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest import cli
from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import oci, ociref
from aicr_pytest.evidence.canonical import sha256_digest
from tests.evidence import helpers
from tests.evidence.conftest import Registry
from tests.evidence.helpers import emitted
from tests.evidence.sigstore_fake import FakeSigstore

IDENTITY = "alice@example.com"
ISSUER = "https://github.com/login/oauth"


def verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["evidence", "verify", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def verify_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = verify(capsys, *args, "--format", "json")
    doc = json.loads(out)
    assert doc["exit"] == code, "the JSON exit field and the process exit code agree"
    return code, doc


def failing_step(doc: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in doc["steps"] if s["status"] == "failed")


def mentions(step: dict[str, Any], name: str) -> bool:
    text = step["detail"] + " " + " ".join(f"{r['key']} {r['value']}" for r in step.get("subRows", []))
    return name in text


# ---- local bundles --------------------------------------------------------------------------------


def test_unsigned_local_bundle_is_valid_and_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emitted(tmp_path / "out")
    code, text, _ = verify(capsys, str(tmp_path / "out"))
    assert code == 0
    assert (
        "| 2 | signature-verify | skipped | no signature attached (unsigned bundle — pending signature) |"
        in text
    )
    assert "**Signer:** _unsigned bundle_" in text
    assert text.rstrip().endswith("**Verdict:** bundle valid but unsigned — pending signature (exit 0)")
    code, doc = verify_json(capsys, str(tmp_path / "out" / "summary-bundle"))
    assert code == 0 and doc["pending"] is True and doc["input"] == "dir"
    assert [s["status"] for s in doc["steps"]] == ["passed", "skipped", "passed", "passed", "informational"]
    assert doc["predicate"]["recipe"]["name"] == "h100-eks-ubuntu-training-kubeflow"


@pytest.mark.parametrize(
    ("results", "exit_code"),
    [
        ({"deployment": [("operator-health", "failed")]}, 1),
        ({"deployment": [("operator-health", "passed"), ("check-nvidia-smi", "other")]}, 1),
        ({"deployment": [("operator-health", "skipped")]}, 0),
    ],
)
def test_recorded_phase_failures_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], results: dict[str, Any], exit_code: int
) -> None:
    emitted(tmp_path / "out", report=helpers.report(results))
    code, doc = verify_json(capsys, str(tmp_path / "out"))
    assert code == exit_code
    assert "failureCause" not in doc
    code, text, _ = verify(capsys, str(tmp_path / "out"))
    if exit_code == 1:
        assert (
            "**Verdict:** bundle valid; recorded validator phase results show failures "
            "(exit 1, informational)" in text
        )


def test_the_guide_tamper_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Flip a CTRF status "passed" -> "failed" (same length): the sha256 check fires."""
    emitted(tmp_path / "out")
    path = tmp_path / "out" / "summary-bundle" / "ctrf" / "deployment.json"
    path.write_text(path.read_text().replace('"passed"', '"failed"', 1))
    code, doc = verify_json(capsys, str(tmp_path / "out"))
    assert code == 2
    step = doc["steps"][3]
    assert step["name"] == "manifest-hash-check" and step["status"] == "failed"
    assert step["detail"].startswith("manifest inventory check failed for 1 file(s)")
    (row,) = step["subRows"]
    assert row["key"] == "ctrf/deployment.json" and row["value"].startswith("sha256 mismatch (got ")
    assert doc["failureCause"]["class"] == "integrity"
    code, text, _ = verify(capsys, str(tmp_path / "out"))
    assert "### Failed check details" in text and "- **manifest-hash-check**" in text
    assert "  - `ctrf/deployment.json` — sha256 mismatch (got " in text
    assert (
        "**Verdict:** bundle invalid — verification failed (exit 2)" in text
        and "**Cause:** `integrity`" in text
    )


def _flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_flipping_one_byte_in_any_bundle_file_fails_naming_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    signed: bool,
    request: pytest.FixtureRequest,
) -> None:
    """Every file of the bundle in turn (a signed bundle: all of them, attestation included)."""
    pristine = tmp_path / "pristine"
    if signed:
        fake: FakeSigstore = request.getfixturevalue("fake_sigstore")
        reg: Registry = request.getfixturevalue("referrers_registry")
        emitted(pristine, push=reg.repo(), token=fake.token(IDENTITY))
    else:
        emitted(pristine)
    files = sorted(
        p.relative_to(pristine / C.SUMMARY_DIR).as_posix()
        for p in (pristine / C.SUMMARY_DIR).rglob("*")
        if p.is_file()
    )
    expected = {
        "bom.cdx.json",
        "ctrf/deployment.json",
        "ctrf/performance.json",
        "manifest.json",
        "recipe.yaml",
        "snapshot.yaml",
        "statement.intoto.json",
    }
    assert set(files) == expected | ({C.ATTESTATION_FILE} if signed else set())
    code, _ = verify_json(capsys, str(pristine))
    assert code == 0
    for rel in files:
        if rel == C.STATEMENT_FILE and not signed:
            continue  # unsigned: only its file-bound fields are checked (see the tests below)
        copy = tmp_path / rel.replace("/", "_")
        shutil.copytree(pristine, copy)
        _flip_middle_byte(copy / C.SUMMARY_DIR / rel)
        code, doc = verify_json(capsys, str(copy))
        assert code == 2, rel
        assert mentions(failing_step(doc), rel), (rel, failing_step(doc))


def test_unsigned_statement_edits_that_break_consistency_are_caught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emitted(tmp_path / "out")
    stmt_path = tmp_path / "out" / C.SUMMARY_DIR / C.STATEMENT_FILE
    pristine = stmt_path.read_bytes()
    stmt = json.loads(pristine)
    stmt["predicate"]["phases"]["deployment"]["ctrfDigest"] = "sha256:" + "0" * 64
    stmt_path.write_bytes(json.dumps(stmt).encode())
    code, doc = verify_json(capsys, str(tmp_path / "out"))
    step = failing_step(doc)
    assert code == 2 and step["detail"].startswith("phase report digest check failed for 1 phase(s)")
    assert (
        step["subRows"][0]["key"] == "ctrf/deployment.json"
        and "ctrfDigest mismatch" in step["subRows"][0]["value"]
    )
    assert mentions(step, C.STATEMENT_FILE)
    stmt = json.loads(pristine)
    stmt["subject"][0]["digest"]["sha256"] = "1" * 64
    stmt_path.write_bytes(json.dumps(stmt).encode())
    code, doc = verify_json(capsys, str(tmp_path / "out"))
    assert code == 2 and mentions(failing_step(doc), "subject is not the recipe named by the predicate")
    stmt_path.write_bytes(b"{")
    code, doc = verify_json(capsys, str(tmp_path / "out"))
    assert (
        code == 2
        and failing_step(doc)["name"] == "predicate-parse"
        and doc["failureCause"]["class"] == "schema"
    )
    assert "render-summary" not in [s["name"] for s in doc["steps"]]


def _statement_edit(tmp_path: Path, name: str, edit: Any) -> Path:
    out = tmp_path / name
    emitted(out)
    path = out / C.SUMMARY_DIR / C.STATEMENT_FILE
    stmt = json.loads(path.read_bytes())
    edit(stmt["predicate"])
    path.write_bytes(json.dumps(stmt).encode())
    return out


def test_an_unsigned_statement_is_bound_to_its_bom_and_manifest_beyond_the_go_verifier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AICR's verifier reads neither ``bom.digest`` nor ``manifest.fileCount``; ours holds both
    against the files, so a statement that no longer describes them fails."""
    zero = "sha256:" + "0" * 64
    out = _statement_edit(tmp_path, "bom", lambda p: p["bom"].update(digest=zero))
    code, doc = verify_json(capsys, str(out))
    bom_hex = sha256_digest((out / C.SUMMARY_DIR / C.BOM_FILE).read_bytes())
    assert code == 2 and doc["failureCause"]["class"] == "integrity"
    assert failing_step(doc)["subRows"] == [
        {"key": C.STATEMENT_FILE, "value": f"predicate.bom.digest ({zero}) is not bom.cdx.json ({bom_hex})"}
    ]
    out = _statement_edit(tmp_path, "count", lambda p: p["manifest"].update(fileCount=99))
    code, doc = verify_json(capsys, str(out))
    assert code == 2 and failing_step(doc)["subRows"] == [
        {
            "key": C.STATEMENT_FILE,
            "value": "predicate.manifest.fileCount is 99, manifest.json lists 5 file(s)",
        }
    ]


def test_flipping_a_byte_of_any_file_bound_statement_field_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every byte of the values that describe files — the subject, the manifest and BOM digests,
    the file count, each phase's CTRF digest and counts — fails when flipped in an unsigned bundle.
    (The advisory fields — fingerprint, criteriaMatch, attestedAt, versions, redaction — are bound
    only by a signature: docs/evidence-bundles.md says so.)"""
    pristine = tmp_path / "pristine"
    emitted(pristine)
    path = pristine / C.SUMMARY_DIR / C.STATEMENT_FILE
    raw = path.read_bytes()
    stmt = json.loads(raw)
    pred = stmt["predicate"]
    values = [
        stmt["subject"][0]["digest"]["sha256"],
        pred["manifest"]["digest"],
        pred["bom"]["digest"],
        *(phase["ctrfDigest"] for phase in pred["phases"].values()),
    ]
    positions = [raw.index(v.encode()) + k for v in values for k in range(0, len(v), 7)]
    positions.append(raw.index(b'"fileCount":') + len(b'"fileCount":'))
    for i in positions:
        flipped = bytearray(raw)
        flipped[i] ^= 0x01
        path.write_bytes(bytes(flipped))
        code, _ = verify_json(capsys, str(pristine))
        assert code == 2, raw[i - 20 : i + 20]
    path.write_bytes(raw)
    assert verify_json(capsys, str(pristine))[0] == 0


def test_added_and_deleted_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    emitted(tmp_path / "out")
    root = tmp_path / "out" / C.SUMMARY_DIR
    (root / "ctrf" / "extra.json").write_text("{}")
    code, doc = verify_json(capsys, str(tmp_path / "out"))
    assert (
        code == 2
        and {"key": "ctrf/extra.json", "value": "file not in manifest.json (unsigned)"}
        in failing_step(doc)["subRows"]
    )
    (root / "ctrf" / "extra.json").unlink()
    (root / "bom.cdx.json").unlink()
    code, doc = verify_json(capsys, str(tmp_path / "out"))
    assert (
        code == 2
        and {"key": "bom.cdx.json", "value": "file missing from bundle: bom.cdx.json"}
        in failing_step(doc)["subRows"]
    )


# ---- input errors (no report, one line, exit 2) ---------------------------------------------------


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        (
            "https://example.com/bundle",
            "http(s):// inputs are not supported — use oci://, a pointer file, or a local directory",
        ),
        (
            "no-such-thing",
            "no-such-thing: no such file or directory, and not an OCI reference (evidence verify "
            "takes a pointer file, a bundle directory or an OCI reference)",
        ),
    ],
)
def test_bad_inputs(capsys: pytest.CaptureFixture[str], arg: str, message: str) -> None:
    code, out, err = verify(capsys, arg, "--format", "json")
    assert code == 2 and out == ""
    assert err == f"aicr-pytest: error: {message}\n"


def test_bad_pointer_and_unpushed_pointer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schemaVersion: 9.9.9\nrecipe: r\nattestations: []\n")
    code, out, err = verify(capsys, str(bad))
    assert code == 2 and out == "" and err.startswith("aicr-pytest: error: pointer ") and err.count("\n") == 1
    emitted(tmp_path / "out")
    code, doc = verify_json(capsys, str(tmp_path / "out" / "pointer.yaml"))
    assert code == 2
    assert failing_step(doc)["detail"] == (
        "pointer carries no bundle.oci — re-run with --bundle <oci-ref> or point at the unpacked directory"
    )
    assert (
        doc["failureCause"]["class"] == "unknown" and doc["pointer"]["attestations"][0]["bundle"]["oci"] == ""
    )


# ---- pushed bundles: pointer and OCI forms --------------------------------------------------------


def test_signed_pointer_verifies_with_pins(
    registry: Registry, fake_sigstore: FakeSigstore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    em = emitted(tmp_path / "out", push=registry.repo(), token=fake_sigstore.token(IDENTITY))
    assert em.signed and em.copy_to.startswith("recipes/evidence/h100-eks-ubuntu-training-kubeflow/")
    pointer = str(em.pointer_path)
    common = [
        "--registry-plain-http",
        "--expected-issuer",
        ISSUER,
        "--expected-identity-regexp",
        r"^alice@example\.com$",
    ]
    code, doc = verify_json(capsys, pointer, *common)
    assert code == 0 and "pending" not in doc
    assert doc["signer"] == {"identity": IDENTITY, "issuer": ISSUER, "rekorLogIndex": 7}
    assert doc["bundleDigest"] == em.digest and doc["input"] == "pointer"
    assert doc["steps"][1] == {
        "step": 2,
        "name": "signature-verify",
        "status": "passed",
        "detail": f"signer {IDENTITY} (issuer {ISSUER})",
        "subRows": [{"key": "rekorLogIndex", "value": "7"}],
    }
    assert doc["steps"][2]["detail"].endswith("(from verified DSSE payload)")
    code, text, err = verify(capsys, pointer, "--registry-plain-http")
    assert (
        code == 0
        and "warning: signature verified but no signer pinned — any Fulcio identity will pass" in err
    )
    assert f"**Signer:** {IDENTITY} (issuer {ISSUER})  •  **Rekor:** index 7" in text
    assert text.rstrip().endswith("**Verdict:** bundle valid — all checks passed (exit 0)")
    code, doc = verify_json(capsys, pointer, "--registry-plain-http", "--expected-identity-regexp", "^bob@")
    assert code == 2 and doc["failureCause"]["class"] == "signature"
    code, doc = verify_json(
        capsys, f"oci://{ociref.parse(em.reference).name}@{em.digest}", "--registry-plain-http"
    )
    assert code == 0 and doc["input"] == "oci" and doc["signer"]["identity"] == IDENTITY


def test_pointer_cross_checks(
    referrers_registry: Registry,
    fake_sigstore: FakeSigstore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    em = emitted(tmp_path / "out", push=referrers_registry.repo(), token=fake_sigstore.token(IDENTITY))
    doc = yaml.safe_load(em.pointer_path.read_text())
    cases = [
        (
            "identity",
            "mallory@example.com",
            "signer identity mismatch: pointer claims mallory@example.com, cert says alice@example.com",
        ),
        (
            "issuer",
            "https://accounts.google.com",
            "signer issuer mismatch: pointer claims https://accounts.google.com",
        ),
        ("rekorLogIndex", 99, "Rekor log index mismatch: pointer claims 99, actual entry 7"),
    ]
    for key, value, message in cases:
        forged = json.loads(json.dumps(doc, default=str))
        forged["attestations"][0]["signer"][key] = value
        path = tmp_path / f"forged-{key}.yaml"
        path.write_text(yaml.safe_dump(forged))
        code, result = verify_json(capsys, str(path), "--registry-plain-http")
        assert code == 2 and failing_step(result)["detail"].startswith(message), key


def test_claimed_signer_without_signature_fails(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    em = emitted(tmp_path / "out", push=registry.repo(), no_sign=True)
    assert not em.signed and "signer" not in em.pointer_path.read_text()
    code, doc = verify_json(capsys, str(em.pointer_path), "--registry-plain-http")
    assert code == 0 and doc["pending"] is True, "pushed unsigned: skipped (unsigned), pending"
    forged = yaml.safe_load(em.pointer_path.read_text())
    forged["attestations"][0]["signer"] = {"identity": IDENTITY, "issuer": ISSUER}
    path = tmp_path / "forged.yaml"
    path.write_text(yaml.safe_dump(forged))
    code, doc = verify_json(capsys, str(path), "--registry-plain-http")
    assert code == 2
    assert failing_step(doc)["detail"] == (
        f"pointer claims a signer ({IDENTITY}, issuer {ISSUER}) but the bundle carries no signature"
    )


def test_a_signature_moved_to_another_artifact_fails_the_subject_lock(
    registry: Registry, fake_sigstore: FakeSigstore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = registry.repo()
    a = emitted(tmp_path / "a", push=repo, token=fake_sigstore.token(IDENTITY))
    b = emitted(
        tmp_path / "b",
        push=repo,
        no_sign=True,
        report=helpers.report({"deployment": [("operator-health", "failed")]}),
    )
    client = oci.RegistryClient(ociref.parse(repo + ":x"), plain_http=True)
    body, _ = client.get_manifest(b.digest)
    oci.attach_signature(
        client,
        oci.Descriptor(C.MT_MANIFEST, b.digest, len(body)),
        (tmp_path / "a" / C.SUMMARY_DIR / C.ATTESTATION_FILE).read_bytes(),
    )
    code, doc = verify_json(capsys, f"{ociref.parse(repo).name}@{b.digest}", "--registry-plain-http")
    assert code == 2
    assert (
        f"does not match pulled artifact digest ({b.digest.removeprefix('sha256:')})"
        in failing_step(doc)["detail"]
    )
    assert a.digest != b.digest


def test_tag_only_references_are_refused_unless_allowed(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    em = emitted(tmp_path / "out", push=registry.repo(), no_sign=True)
    code, doc = verify_json(capsys, em.reference, "--registry-plain-http")
    assert code == 2 and failing_step(doc)["detail"].startswith(
        f"OCI reference {em.reference} is tag-only — refusing"
    )
    code, doc = verify_json(capsys, em.reference, "--registry-plain-http", "--allow-unpinned-tag")
    assert code == 0 and doc["bundleDigest"] == em.digest


def test_missing_artifact_is_not_found(registry: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = verify_json(capsys, f"{registry.repo()}@sha256:{'a' * 64}", "--registry-plain-http")
    assert code == 2
    assert doc["failureCause"]["class"] == "not-found" and doc["failureCause"]["httpStatus"] == 404
    assert (
        doc["failureCause"]["hint"]
        == "bundle not found at the referenced digest (was it pushed to this registry?)"
    )


def test_a_summary_bundle_rooted_artifact_verifies_too(
    referrers_registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Artifacts whose layer holds ``summary-bundle/…`` (not the files at the root) are read as well."""
    helpers.build(tmp_path / "out")
    repo = referrers_registry.repo()
    client = oci.RegistryClient(ociref.parse(repo + ":t"), plain_http=True)
    data, tar_digest = oci.pack(tmp_path / "out", exclude=frozenset({"pointer.yaml"}))
    client.upload_blob(C.EMPTY_CONFIG, C.MT_EMPTY)
    blob = client.upload_blob(data, C.MT_LAYER_TGZ)
    layer = oci.Descriptor(
        blob.media_type,
        blob.digest,
        blob.size,
        annotations=((C.ANN_CONTENT_DIGEST, tar_digest), (C.ANN_UNPACK, "true"), (C.ANN_TITLE, ".")),
    )
    body = oci.artifact_manifest(layer, "0")
    client.put_manifest(body, C.MT_MANIFEST, "rooted")
    code, doc = verify_json(
        capsys, f"{ociref.parse(repo).name}@{sha256_digest(body)}", "--registry-plain-http"
    )
    assert code == 0 and doc["steps"][0]["detail"].endswith("/summary-bundle")
