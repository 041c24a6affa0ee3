"""Keyless DSSE signing and signature verification with sigstore-python.

Trust: Sigstore's public-good instance (``ClientTrustConfig.production()``; verification uses the
embedded/cached trusted root and never touches the network).  Tests point
``AICR_PYTEST_TEST_TRUST_CONFIG`` at a ClientTrustConfig of a private instance; whenever that happens
a warning line says so.

sigstore-python's ``Verifier.verify_dsse`` checks the certificate chain, SCT, transparency-log entry
and DSSE signature, but not the payload: the payload type and the Statement's subject digest are
checked here.  Its identity policies are exact-match only, so :class:`IdentityPolicy` implements the
issuer pin and the SAN regular expression.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence.predicate import Predicate, StatementError, parse_statement

if TYPE_CHECKING:
    from cryptography.x509 import Certificate
    from sigstore.models import ClientTrustConfig, TrustedRoot

SIGN_ATTEMPTS: Final = 3
SIGN_DEADLINE_S: Final = 120.0
STALE_ROOT_HINTS: Final = (
    "certificate signed by unknown authority",
    "certificate chain",
    "x509",
    "unable to verify certificate",
    "root certificate",
)


class SigningError(Exception):
    """Keyless signing failed (message safe to print)."""


class SignatureInvalid(Exception):
    """The Sigstore bundle does not verify, or does not say what it must."""


def override_trust_config_path(env: Mapping[str, str]) -> Path | None:
    value = env.get(C.TEST_TRUST_CONFIG_ENV)
    return Path(value) if value else None


def load_trust_config(
    env: Mapping[str, str], *, offline: bool, warn: Callable[[str], None]
) -> ClientTrustConfig:
    from sigstore.models import ClientTrustConfig

    path = override_trust_config_path(env)
    if path is not None:
        warn(
            f"warning: using the Sigstore trust configuration in {path} ({C.TEST_TRUST_CONFIG_ENV}), "
            "not Sigstore's public-good instance"
        )
        return ClientTrustConfig.from_json(path.read_text(encoding="utf-8"))
    return ClientTrustConfig.production(offline=offline)


def service_urls(trust: ClientTrustConfig) -> tuple[str, str, str]:
    """(Fulcio, Rekor, OIDC issuer) URLs of a trust configuration's signing config."""
    sc = trust.signing_config
    fulcio = sc.get_fulcio().url
    tlogs = sc.get_tlogs()
    rekor = str(getattr(tlogs[0], "url", "")).removesuffix("/api/v1") if tlogs else ""
    try:
        oidc = sc.get_oidc_url()
    except Exception:
        oidc = C.DEFAULT_OIDC_ISSUER
    return fulcio, rekor, oidc


# ---- certificate claims --------------------------------------------------------------------------


def _der_utf8(value: bytes) -> str:
    """Decode a DER UTF8String (tag 0x0C, short or long length form)."""
    if len(value) < 2 or value[0] != 0x0C:
        raise ValueError("not a DER UTF8String")
    length = value[1]
    offset = 2
    if length & 0x80:
        n = length & 0x7F
        if n == 0 or n > 4 or len(value) < 2 + n:
            raise ValueError("bad DER length")
        length = int.from_bytes(value[2 : 2 + n], "big")
        offset = 2 + n
    if len(value) != offset + length:
        raise ValueError("DER length does not match")
    return value[offset:].decode("utf-8")


def issuer_of(cert: Certificate) -> str:
    """The OIDC issuer extension: OID …1.8 (DER UTF8String) preferred, legacy …1.1 (raw) fallback."""
    from cryptography.x509 import ExtensionNotFound, ObjectIdentifier

    for oid, decode in ((C.OID_ISSUER_V2, _der_utf8), (C.OID_ISSUER_V1, lambda b: b.decode("utf-8"))):
        try:
            ext = cert.extensions.get_extension_for_oid(ObjectIdentifier(oid))
        except ExtensionNotFound:
            continue
        try:
            return decode(ext.value.value)  # type: ignore[attr-defined]
        except (ValueError, UnicodeDecodeError):
            continue
    return ""


def sans_of(cert: Certificate) -> tuple[list[str], list[str], list[str]]:
    """(e-mail SANs, URI SANs, Sigstore otherName SANs)."""
    from cryptography.x509 import (
        ExtensionNotFound,
        ObjectIdentifier,
        OtherName,
        RFC822Name,
        SubjectAlternativeName,
        UniformResourceIdentifier,
    )

    try:
        san = cert.extensions.get_extension_for_class(SubjectAlternativeName).value
    except ExtensionNotFound:
        return [], [], []
    others: list[str] = []
    for other in san.get_values_for_type(OtherName):
        if other.type_id == ObjectIdentifier(C.OID_OTHERNAME_SAN):
            try:
                others.append(_der_utf8(other.value))
            except (ValueError, UnicodeDecodeError):
                continue
    return (
        list(san.get_values_for_type(RFC822Name)),
        list(san.get_values_for_type(UniformResourceIdentifier)),
        others,
    )


def identity_of(cert: Certificate) -> str:
    emails, uris, others = sans_of(cert)
    return (emails or uris or others or [""])[0]


class IdentityPolicy:
    """A sigstore ``VerificationPolicy``: exact issuer (when pinned) and SAN regex search (when pinned)."""

    def __init__(self, issuer: str | None = None, identity_regexp: str | None = None) -> None:
        self.issuer = issuer or None
        self.pattern = re.compile(identity_regexp) if identity_regexp else None

    def verify(self, cert: Certificate) -> None:
        from sigstore.errors import VerificationError

        if self.issuer is not None:
            actual = issuer_of(cert)
            if actual != self.issuer:
                raise VerificationError(
                    f"certificate issuer {actual!r} does not match expected {self.issuer!r}"
                )
        if self.pattern is not None:
            emails, uris, others = sans_of(cert)
            names = emails + uris + others
            if not any(self.pattern.search(name) for name in names):
                raise VerificationError(
                    f"no certificate identity matches {self.pattern.pattern!r} "
                    f"(identities: {', '.join(names)})"
                )


def rekor_log_index(bundle_json: Mapping[str, Any]) -> int:
    entries = bundle_json.get("verificationMaterial", {}).get("tlogEntries") or []
    try:
        return int(entries[0].get("logIndex", 0)) if entries else 0
    except (TypeError, ValueError):
        return 0


# ---- signing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SignResult:
    bundle_json: bytes
    identity: str
    issuer: str
    rekor_log_index: int


def _retryable(err: BaseException) -> bool:
    """Transport errors and HTTP 5xx/429 from Fulcio or Rekor (sigstore wraps them: follow the causes)."""
    import requests
    from sigstore.errors import NetworkError

    seen: BaseException | None = err
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, NetworkError | requests.ConnectionError | requests.Timeout):
            return True
        if isinstance(seen, requests.HTTPError) and seen.response is not None:
            return seen.response.status_code >= 500 or seen.response.status_code == 429
        nested = seen.args[0] if seen.args and isinstance(seen.args[0], BaseException) else None
        seen = seen.__cause__ or nested
    return False


def sign_statement(
    statement: bytes,
    raw_token: str,
    trust: ClientTrustConfig,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> SignResult:
    """DSSE-sign the in-toto Statement bytes keylessly (Fulcio certificate + Rekor entry)."""
    from sigstore import dsse
    from sigstore.oidc import IdentityError, IdentityToken
    from sigstore.sign import SigningContext

    try:
        token = IdentityToken(raw_token)
    except IdentityError as err:
        raise SigningError(f"identity token rejected: {err}") from None
    stmt = dsse.Statement(statement)
    ctx = SigningContext.from_trust_config(trust)
    deadline = clock() + SIGN_DEADLINE_S
    delay = 1.0
    for attempt in range(1, SIGN_ATTEMPTS + 1):
        try:
            with ctx.signer(token, cache=True) as signer:  # cache=False makes a new key per use
                bundle = signer.sign_dsse(stmt)
            break
        except Exception as err:  # sigstore raises many types; only transport errors and 5xx are retried
            if not _retryable(err):
                raise SigningError(f"keyless signing failed: {type(err).__name__}: {err}") from None
            if attempt == SIGN_ATTEMPTS or clock() + delay > deadline:
                raise SigningError(
                    f"keyless signing failed after {attempt} attempt(s): {type(err).__name__}"
                ) from None
            sleep(delay)
            delay *= 5
    text = bundle.to_json()
    if raw_token in text:
        raise SigningError("refusing to store a Sigstore bundle that contains the identity token")
    cert = bundle.signing_certificate
    return SignResult(
        text.encode("utf-8"), identity_of(cert), issuer_of(cert), rekor_log_index(json.loads(text))
    )


# ---- verification --------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifiedSignature:
    statement: dict[str, Any]
    predicate: Predicate
    identity: str
    issuer: str
    rekor_log_index: int


def payload_of(bundle_doc: Mapping[str, Any]) -> bytes:
    envelope = bundle_doc.get("dsseEnvelope")
    if not isinstance(envelope, dict) or not isinstance(envelope.get("payload"), str):
        raise SignatureInvalid("Sigstore bundle carries no DSSE envelope")
    try:
        return base64.b64decode(envelope["payload"], validate=True)
    except ValueError:
        raise SignatureInvalid("DSSE payload is not base64") from None


@dataclass(frozen=True)
class VerifiedDSSE:
    """A verified in-toto DSSE bundle: the Statement, its signer and the raw bundle document."""

    statement: dict[str, Any]
    payload: bytes
    identity: str
    issuer: str
    rekor_log_index: int


def _subjects(statement: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for subject in statement.get("subject") or ():
        digest = subject.get("digest") if isinstance(subject, dict) else None
        if isinstance(digest, dict) and isinstance(digest.get("sha256"), str):
            out.append(digest["sha256"])
    return out


def verify_dsse_bundle(
    raw: bytes,
    trusted_root: TrustedRoot,
    *,
    expected_subject_hex: str | None,
    issuer: str | None = None,
    identity_regexp: str | None = None,
) -> VerifiedDSSE:
    """Cryptographically verify a DSSE Sigstore bundle whose payload is an in-toto Statement.

    On top of sigstore-python: the payload type must be in-toto, the verified payload must be the
    envelope's payload, and (when given) ``expected_subject_hex`` must be one of the subject digests.
    """
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle, InvalidBundle
    from sigstore.verify import Verifier

    if len(raw) > C.MAX_SIGSTORE_BUNDLE:
        raise SignatureInvalid("Sigstore bundle is larger than 10 MiB")
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise SignatureInvalid("Sigstore bundle is not JSON") from None
    if not isinstance(doc, dict):
        raise SignatureInvalid("Sigstore bundle is not a JSON object")
    payload = payload_of(doc)
    try:
        statement = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise SignatureInvalid("signed payload is not JSON") from None
    if not isinstance(statement, dict) or statement.get("_type") != C.STATEMENT_TYPE:
        raise SignatureInvalid("signed payload is not an in-toto Statement v1")
    subjects = _subjects(statement)
    if expected_subject_hex is not None and expected_subject_hex not in subjects:
        raise SignatureInvalid(
            f"signed subject digest ({', '.join(subjects) or 'none'}) does not match pulled "
            f"artifact digest ({expected_subject_hex})"
        )
    try:
        bundle = Bundle.from_json(raw)
    except InvalidBundle as err:
        raise SignatureInvalid(f"invalid Sigstore bundle: {err}") from None
    try:
        payload_type, verified = Verifier(trusted_root=trusted_root).verify_dsse(
            bundle, IdentityPolicy(issuer, identity_regexp)
        )
    except (SigstoreError, ValueError) as err:
        text = str(err)
        if type(err).__name__ == "CertValidationError" or any(h in text.lower() for h in STALE_ROOT_HINTS):
            raise SignatureInvalid(
                "sigstore verification failed — trusted root may be stale.\n\n"
                f"  To fix: re-run with --update-trust-root (needs network access). ({text})"
            ) from None
        raise SignatureInvalid(f"sigstore verification failed: {text}") from None
    if payload_type != C.INTOTO_PAYLOAD_TYPE:
        raise SignatureInvalid(f"DSSE payload type is {payload_type!r}, want {C.INTOTO_PAYLOAD_TYPE}")
    if verified != payload:
        raise SignatureInvalid("verified DSSE payload differs from the envelope's payload")
    cert = bundle.signing_certificate
    return VerifiedDSSE(statement, payload, identity_of(cert), issuer_of(cert), rekor_log_index(doc))


def verify_bundle(
    raw: bytes,
    trusted_root: TrustedRoot,
    *,
    expected_subject_hex: str | None,
    issuer: str | None = None,
    identity_regexp: str | None = None,
) -> VerifiedSignature:
    """:func:`verify_dsse_bundle`, and the payload must be a recipe-evidence/v1 Statement."""
    checked = verify_dsse_bundle(
        raw,
        trusted_root,
        expected_subject_hex=expected_subject_hex,
        issuer=issuer,
        identity_regexp=identity_regexp,
    )
    try:
        statement, predicate = parse_statement(checked.payload)
    except StatementError as err:
        raise SignatureInvalid(f"signed payload: {err}") from None
    return VerifiedSignature(statement, predicate, checked.identity, checked.issuer, checked.rekor_log_index)
