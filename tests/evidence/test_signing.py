"""Keyless signing and verification with the real sigstore signer and verifier.

Against the private test instance (tests/evidence/sigstore_fake.py, wired through a sigstore
ClientTrustConfig), and against a real bundle made by Sigstore's public-good production
infrastructure, verified offline with the production trusted root embedded in sigstore-python
(provenance: tests/evidence/fixtures/PROVENANCE.md — sigstore/sigstore-conformance
@a73de4970176d258e0154c530b89d20b89444e4d, test/assets/bundle-verify/happy-path-intoto-in-dsse-v3/
bundle.sigstore.json).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from sigstore.models import ClientTrustConfig, TrustedRoot

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import predicate, signing
from tests.evidence.sigstore_fake import GHA_ISSUER, FakeSigstore

PRODUCTION_BUNDLE = (
    Path(__file__).parent / "fixtures" / "sigstore-conformance-happy-path-intoto-in-dsse-v3.sigstore.json"
)
PRODUCTION_SUBJECT = "a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf"
PRODUCTION_IDENTITY = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
    ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
SUBJECT = "b" * 64
PREDICATE: dict[str, Any] = {
    "schemaVersion": "1.0.0",
    "recipe": {"name": "h100-eks-ubuntu-training", "digest": "c" * 64},
    "phases": {"deployment": {"passed": 4, "failed": 0, "skipped": 0, "ctrfDigest": "sha256:" + "d" * 64}},
    "manifest": {"digest": "sha256:" + "e" * 64, "fileCount": 5},
}


def trust(fake: FakeSigstore) -> ClientTrustConfig:
    return ClientTrustConfig.from_json(json.dumps(fake.trust_config()))


def production_root() -> TrustedRoot:
    return ClientTrustConfig.production(offline=True).trusted_root


def sign(fake: FakeSigstore, token: str | None = None) -> signing.SignResult:
    statement = predicate.statement_bytes("127.0.0.1:5000/ev/aicr-evidence:t", SUBJECT, PREDICATE)
    return signing.sign_statement(statement, token or fake.token("alice@example.com"), trust(fake))


def test_sign_and_verify_end_to_end(fake_sigstore: FakeSigstore) -> None:
    result = sign(fake_sigstore)
    assert (result.identity, result.issuer) == ("alice@example.com", "https://github.com/login/oauth")
    assert result.rekor_log_index == 7, "first entry after the 7 filler leaves"
    doc = json.loads(result.bundle_json)
    assert doc["mediaType"] == C.SIGSTORE_BUNDLE_TYPE
    assert b"\n" not in result.bundle_json
    entry = doc["verificationMaterial"]["tlogEntries"][0]
    assert entry["kindVersion"] == {"kind": "dsse", "version": "0.0.1"}
    assert entry["inclusionProof"]["checkpoint"]["envelope"] and entry["inclusionPromise"]
    assert doc["dsseEnvelope"]["payloadType"] == C.INTOTO_PAYLOAD_TYPE
    payload = base64.b64decode(doc["dsseEnvelope"]["payload"])
    assert payload == predicate.statement_bytes("127.0.0.1:5000/ev/aicr-evidence:t", SUBJECT, PREDICATE)

    verified = signing.verify_bundle(
        result.bundle_json,
        trust(fake_sigstore).trusted_root,
        expected_subject_hex=SUBJECT,
        issuer="https://github.com/login/oauth",
        identity_regexp=r"^alice@example\.com$",
    )
    assert verified.identity == "alice@example.com" and verified.rekor_log_index == 7
    assert verified.predicate.phases["deployment"].passed == 4
    assert sign(fake_sigstore).rekor_log_index == 8, "the log grows; inclusion proofs cover larger trees"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"issuer": "https://accounts.google.com"}, "does not match expected 'https://accounts.google.com'"),
        ({"identity_regexp": r"^bob@"}, "no certificate identity matches '\\^bob@'"),
        ({"expected_subject_hex": "f" * 64}, "does not match pulled artifact digest"),
    ],
)
def test_policy_and_subject_lock(fake_sigstore: FakeSigstore, kwargs: dict[str, Any], message: str) -> None:
    result = sign(fake_sigstore)
    args: dict[str, Any] = {"expected_subject_hex": SUBJECT, **kwargs}
    with pytest.raises(signing.SignatureInvalid, match=message):
        signing.verify_bundle(result.bundle_json, trust(fake_sigstore).trusted_root, **args)


def test_tampered_payload_and_foreign_trust_roots_fail(fake_sigstore: FakeSigstore) -> None:
    result = sign(fake_sigstore)
    doc = json.loads(result.bundle_json)
    stmt = json.loads(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    stmt["predicate"]["phases"]["deployment"]["failed"] = 1
    doc["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    with pytest.raises(signing.SignatureInvalid, match="sigstore verification failed"):
        signing.verify_bundle(
            json.dumps(doc).encode(), trust(fake_sigstore).trusted_root, expected_subject_hex=SUBJECT
        )
    with pytest.raises(signing.SignatureInvalid, match="trusted root may be stale"):
        signing.verify_bundle(result.bundle_json, production_root(), expected_subject_hex=SUBJECT)


def test_github_actions_identity_is_the_uri_san(fake_sigstore: FakeSigstore) -> None:
    workflow = "https://github.com/o/r/.github/workflows/evidence.yaml@refs/heads/main"
    result = sign(fake_sigstore, fake_sigstore.token(workflow, issuer=GHA_ISSUER))
    assert (result.identity, result.issuer) == (workflow, GHA_ISSUER)
    signing.verify_bundle(
        result.bundle_json,
        trust(fake_sigstore).trusted_root,
        expected_subject_hex=SUBJECT,
        issuer=GHA_ISSUER,
        identity_regexp=r"^https://github\.com/o/r/\.github/workflows/evidence\.yaml@refs/heads/.+$",
    )


def test_signing_retries_5xx_and_rejects_bad_tokens(fake_sigstore: FakeSigstore) -> None:
    statement = predicate.statement_bytes("r/x:t", SUBJECT, PREDICATE)
    fake_sigstore.fail_fulcio = 1
    sleeps: list[float] = []
    signing.sign_statement(statement, fake_sigstore.token(), trust(fake_sigstore), sleep=sleeps.append)
    assert sleeps == [1.0]
    fake_sigstore.fail_fulcio = 10
    with pytest.raises(signing.SigningError, match="after 3 attempt"):
        signing.sign_statement(statement, fake_sigstore.token(), trust(fake_sigstore), sleep=sleeps.append)
    with pytest.raises(signing.SigningError, match="identity token rejected"):
        signing.sign_statement(statement, "not-a-jwt", trust(fake_sigstore))


# ---- a real production bundle ---------------------------------------------------------------------


def test_real_production_bundle_verifies_offline_with_the_embedded_root() -> None:
    raw = PRODUCTION_BUNDLE.read_bytes()
    verified = signing.verify_dsse_bundle(
        raw,
        production_root(),
        expected_subject_hex=PRODUCTION_SUBJECT,
        issuer="https://token.actions.githubusercontent.com",
        identity_regexp=r"^https://github\.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/",
    )
    assert verified.identity == PRODUCTION_IDENTITY
    assert verified.issuer == "https://token.actions.githubusercontent.com"
    assert verified.rekor_log_index == 155690850
    assert verified.statement["predicateType"] == "https://slsa.dev/provenance/v1"


def test_real_production_bundle_policy_subject_and_tampering() -> None:
    raw = PRODUCTION_BUNDLE.read_bytes()
    with pytest.raises(
        signing.SignatureInvalid, match=r"does not match expected 'https://github\.com/login/oauth'"
    ):
        signing.verify_dsse_bundle(
            raw, production_root(), expected_subject_hex=None, issuer="https://github.com/login/oauth"
        )
    with pytest.raises(signing.SignatureInvalid, match="does not match pulled artifact digest"):
        signing.verify_dsse_bundle(raw, production_root(), expected_subject_hex="0" * 64)
    doc = json.loads(raw)
    sig = base64.b64decode(doc["dsseEnvelope"]["signatures"][0]["sig"])
    doc["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(sig[:-1] + bytes([sig[-1] ^ 1])).decode()
    with pytest.raises(signing.SignatureInvalid, match="sigstore verification failed"):
        signing.verify_dsse_bundle(json.dumps(doc).encode(), production_root(), expected_subject_hex=None)
    with pytest.raises(signing.SignatureInvalid, match="predicateType"):
        signing.verify_bundle(raw, production_root(), expected_subject_hex=None)
