"""A private Sigstore instance for offline tests: Fulcio, CT log, Rekor v1 and an OIDC issuer with the
device authorization grant, served over HTTP on 127.0.0.1 (test-only code).

It speaks the public APIs the real ``sigstore`` client uses (``POST /api/v2/signingCert``,
``POST /api/v1/log/entries``, OIDC discovery), and :meth:`FakeSigstore.trust_config` describes it
as a sigstore ``ClientTrustConfig`` (trusted root + signing config).  So the production code path
— ``SigningContext.from_trust_config`` + ``Signer.sign_dsse`` and ``Verifier.verify_dsse`` — runs
unchanged against it:

* Fulcio issues a short-lived leaf for the CSR's key: empty subject, critical SAN (e-mail, or URI
  for GitHub Actions tokens), digitalSignature, codeSigning, the OIDC issuer extensions (…1.1 raw,
  …1.8 DER UTF8String; the issuer is the token's ``federated_claims.connector_id`` when present,
  like Sigstore's Dex) and an embedded precertificate SCT signed by the CT key (RFC 6962).
* Rekor appends canonical ``dsse`` v0.0.1 entries to an RFC 6962 Merkle tree (seeded with a few
  filler leaves so log indexes are not 0), and answers with an inclusion proof, a signed
  checkpoint and a signed entry timestamp.
* The OIDC issuer mints HS256 JWTs (clients never verify them) and runs a scripted RFC 8628 device
  flow with PKCE checking.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import struct
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

GHA_ISSUER = "https://token.actions.githubusercontent.com"
OID_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
OID_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
OID_SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
FILLER_LEAVES = 7
JWT_KEY = "aicr-pytest fake issuer key, not a secret"


def _spki(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _key_id(key: ec.EllipticCurvePrivateKey) -> bytes:
    return hashlib.sha256(_spki(key)).digest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _der_utf8(text: str) -> bytes:
    raw = text.encode()
    if len(raw) < 0x80:
        return bytes([0x0C, len(raw)]) + raw
    n = (len(raw).bit_length() + 7) // 8
    return bytes([0x0C, 0x80 | n]) + len(raw).to_bytes(n, "big") + raw


def _der_octets(raw: bytes) -> bytes:
    if len(raw) < 0x80:
        return bytes([0x04, len(raw)]) + raw
    n = (len(raw).bit_length() + 7) // 8
    return bytes([0x04, 0x80 | n]) + len(raw).to_bytes(n, "big") + raw


def _leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def merkle_root(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return _node(merkle_root(leaves[:k]), merkle_root(leaves[k:]))


def audit_path(index: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*audit_path(index, leaves[:k]), merkle_root(leaves[k:])]
    return [*audit_path(index - k, leaves[k:]), merkle_root(leaves[:k])]


@dataclass
class DeviceFlowScript:
    """What the token endpoint answers, poll by poll, before it hands out the id_token."""

    answers: list[str] = field(
        default_factory=list
    )  # "authorization_pending", "slow_down", "access_denied", ...
    identity: str = "dev@example.com"
    federated_issuer: str = "https://github.com/login/oauth"


class FakeSigstore:
    def __init__(self) -> None:
        self.now = dt.datetime.now(dt.UTC)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ct_key = ec.generate_private_key(ec.SECP256R1())
        self.rekor_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "aicr-pytest-test"),
                x509.NameAttribute(NameOID.COMMON_NAME, "fake-fulcio"),
            ]
        )
        ski = x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key())
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.now - dt.timedelta(days=1))
            .not_valid_after(self.now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(ski, critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
            )
            .sign(self.ca_key, hashes.SHA256())
        )
        self.leaves: list[bytes] = [_leaf_hash(f"filler {i}".encode()) for i in range(FILLER_LEAVES)]
        self.entries: list[dict[str, Any]] = []
        self.issued: list[x509.Certificate] = []
        self.device = DeviceFlowScript()
        self.device_requests: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        self._challenges: dict[str, str] = {}
        self.fail_fulcio = 0  # answer this many signingCert calls with HTTP 503
        self.lock = threading.Lock()
        self.base_url = ""
        self.trust_config_path: Path | None = None

    # -- identity tokens -------------------------------------------------------------------------

    def token(
        self,
        identity: str = "alice@example.com",
        *,
        issuer: str | None = None,
        federated_issuer: str | None = "https://github.com/login/oauth",
        lifetime_s: int = 600,
    ) -> str:
        now = int(time.time())
        iss = issuer or self.oidc_url
        claims: dict[str, Any] = {
            "iss": iss,
            "aud": "sigstore",
            "sub": identity,
            "iat": now,
            "exp": now + lifetime_s,
        }
        if iss != GHA_ISSUER:
            claims["email"] = identity
            claims["email_verified"] = True
            if federated_issuer:
                claims["federated_claims"] = {"connector_id": federated_issuer, "user_id": "1"}
        return jwt.encode(claims, JWT_KEY, algorithm="HS256")

    @property
    def oidc_url(self) -> str:
        return self.base_url + "/auth"

    # -- Fulcio ----------------------------------------------------------------------------------

    def _sct_list(self, tbs: bytes, timestamp_ms: int) -> bytes:
        issuer_key_hash = hashlib.sha256(_spki(self.ca_key)).digest()
        signed_entry = issuer_key_hash + len(tbs).to_bytes(3, "big") + tbs
        digitally_signed = struct.pack("!BBQH", 0, 0, timestamp_ms, 1) + signed_entry + struct.pack("!H", 0)
        signature = self.ct_key.sign(digitally_signed, ec.ECDSA(hashes.SHA256()))
        sct = (
            struct.pack("!B", 0)
            + _key_id(self.ct_key)
            + struct.pack("!QH", timestamp_ms, 0)
            + struct.pack("!BBH", 4, 3, len(signature))
            + signature
        )
        return struct.pack("!HH", len(sct) + 2, len(sct)) + sct

    def issue(self, public_key: Any, claims: dict[str, Any]) -> x509.Certificate:
        issuer = claims["iss"]
        federated = claims.get("federated_claims")
        if isinstance(federated, dict) and federated.get("connector_id"):
            issuer = federated["connector_id"]
        if claims["iss"] == GHA_ISSUER:
            san: x509.GeneralName = x509.UniformResourceIdentifier(claims["sub"])
        else:
            san = x509.RFC822Name(claims.get("email") or claims["sub"])
        now = dt.datetime.now(dt.UTC)
        serial = x509.random_serial_number()

        def builder() -> x509.CertificateBuilder:
            return (
                x509.CertificateBuilder()
                .subject_name(x509.Name([]))
                .issuer_name(self.ca_cert.subject)
                .public_key(public_key)
                .serial_number(serial)
                .not_valid_before(now - dt.timedelta(seconds=5))
                .not_valid_after(now + dt.timedelta(minutes=10))
                .add_extension(
                    x509.KeyUsage(
                        digital_signature=True,
                        content_commitment=False,
                        key_encipherment=False,
                        data_encipherment=False,
                        key_agreement=False,
                        key_cert_sign=False,
                        crl_sign=False,
                        encipher_only=False,
                        decipher_only=False,
                    ),
                    critical=True,
                )
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
                .add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                    critical=False,
                )
                .add_extension(x509.SubjectAlternativeName([san]), critical=True)
                .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V1, issuer.encode()), critical=False)
                .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V2, _der_utf8(issuer)), critical=False)
            )

        precert = builder().sign(self.ca_key, hashes.SHA256())
        tbs = precert.tbs_certificate_bytes
        sct_ext = x509.UnrecognizedExtension(
            OID_SCT_LIST, _der_octets(self._sct_list(tbs, int(time.time() * 1000)))
        )
        cert = builder().add_extension(sct_ext, critical=False).sign(self.ca_key, hashes.SHA256())
        cert = x509.load_der_x509_certificate(cert.public_bytes(serialization.Encoding.DER))
        assert cert.tbs_precertificate_bytes == tbs, "SCT extension must be the last one"
        self.issued.append(cert)
        return cert

    # -- Rekor -----------------------------------------------------------------------------------

    def log_dsse(self, proposed: dict[str, Any]) -> dict[str, Any]:
        content = proposed["spec"]["proposedContent"]
        envelope_text = content["envelope"]
        envelope = json.loads(envelope_text)
        body = {
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(envelope_text.encode()).hexdigest(),
                },
                "payloadHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(base64.b64decode(envelope["payload"])).hexdigest(),
                },
                "signatures": [
                    {"signature": envelope["signatures"][0]["sig"], "verifier": content["verifiers"][0]}
                ],
            },
        }
        canonical = rfc8785.dumps(body)
        with self.lock:
            index = len(self.leaves)
            self.leaves.append(_leaf_hash(canonical))
            leaves = list(self.leaves)
        root = merkle_root(leaves)
        proof = audit_path(index, leaves)
        key_id = _key_id(self.rekor_key)
        note = f"fake-rekor - aicr-pytest\n{len(leaves)}\n{_b64(root)}\n"
        note_sig = self.rekor_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        checkpoint = note + "\n" + f"\u2014 fake-rekor {_b64(key_id[:4] + note_sig)}\n"
        integrated = int(time.time())
        set_payload = rfc8785.dumps(
            {"body": _b64(canonical), "integratedTime": integrated, "logID": key_id.hex(), "logIndex": index}
        )
        set_sig = self.rekor_key.sign(set_payload, ec.ECDSA(hashes.SHA256()))
        entry = {
            "body": _b64(canonical),
            "integratedTime": integrated,
            "logID": key_id.hex(),
            "logIndex": index,
            "verification": {
                "inclusionProof": {
                    "checkpoint": checkpoint,
                    "hashes": [h.hex() for h in proof],
                    "logIndex": index,
                    "rootHash": root.hex(),
                    "treeSize": len(leaves),
                },
                "signedEntryTimestamp": _b64(set_sig),
            },
        }
        self.entries.append(entry)
        return {hashlib.sha256(canonical).hexdigest(): entry}

    # -- trust configuration -------------------------------------------------------------------

    def trust_config(self) -> dict[str, Any]:
        start = (self.now - dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

        def log(url: str, key: ec.EllipticCurvePrivateKey) -> dict[str, Any]:
            return {
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": _b64(_spki(key)),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": start},
                },
                "logId": {"keyId": _b64(_key_id(key))},
            }

        def service(url: str) -> dict[str, Any]:
            return {
                "url": url,
                "majorApiVersion": 1,
                "validFor": {"start": start},
                "operator": "aicr-pytest-test",
            }

        return {
            "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
            "trustedRoot": {
                "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
                "tlogs": [log(self.base_url, self.rekor_key)],
                "certificateAuthorities": [
                    {
                        "subject": {"organization": "aicr-pytest-test", "commonName": "fake-fulcio"},
                        "uri": self.base_url,
                        "certChain": {
                            "certificates": [
                                {"rawBytes": _b64(self.ca_cert.public_bytes(serialization.Encoding.DER))}
                            ]
                        },
                        "validFor": {"start": start},
                    }
                ],
                "ctlogs": [log(self.base_url + "/ct", self.ct_key)],
                "timestampAuthorities": [],
            },
            "signingConfig": {
                "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
                "caUrls": [service(self.base_url)],
                "oidcUrls": [service(self.oidc_url)],
                "rekorTlogUrls": [service(self.base_url)],
                "tsaUrls": [],
                "rekorTlogConfig": {"selector": "ANY"},
                "tsaConfig": {"selector": "ANY"},
            },
        }

    # -- device flow -----------------------------------------------------------------------------

    def device_authorize(self, form: dict[str, str]) -> dict[str, Any]:
        self.device_requests.append(form)
        code = f"dc-{len(self.device_requests)}"
        self._challenges[code] = form.get("code_challenge", "")
        return {
            "device_code": code,
            "user_code": "WXYZ-1234",
            "verification_uri": self.oidc_url + "/device",
            "verification_uri_complete": self.oidc_url + "/device?user_code=WXYZ-1234",
            "expires_in": 300,
            "interval": 1,
        }

    def device_token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        self.token_requests.append(form)
        verifier = form.get("code_verifier", "")
        expected = self._challenges.get(form.get("device_code", ""), "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" or challenge != expected:
            return 400, {"error": "invalid_grant"}
        if self.device.answers:
            return 400, {"error": self.device.answers.pop(0)}
        token = self.token(self.device.identity, federated_issuer=self.device.federated_issuer)
        return 200, {"id_token": token, "access_token": "opaque", "token_type": "bearer"}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path == "/auth/.well-known/openid-configuration":
            self._send(
                200,
                {
                    "issuer": fake.oidc_url,
                    "authorization_endpoint": fake.oidc_url + "/authorize",
                    "token_endpoint": fake.oidc_url + "/token",
                    "device_authorization_endpoint": fake.oidc_url + "/device/code",
                },
            )
        else:
            self._send(404, {"message": "not found"})

    def do_POST(self) -> None:
        fake = self.server.fake
        body = self._body()
        if self.path == "/api/v2/signingCert":
            if fake.fail_fulcio > 0:
                fake.fail_fulcio -= 1
                self._send(503, {"message": "try again"})
                return
            auth = self.headers.get("Authorization", "")
            claims = jwt.decode(auth.removeprefix("Bearer "), options={"verify_signature": False})
            csr_pem = base64.b64decode(json.loads(body)["certificateSigningRequest"])
            csr = x509.load_pem_x509_csr(csr_pem)
            cert = fake.issue(csr.public_key(), claims)
            chain = [c.public_bytes(serialization.Encoding.PEM).decode() for c in (cert, fake.ca_cert)]
            self._send(201, {"signedCertificateEmbeddedSct": {"chain": {"certificates": chain}}})
        elif self.path == "/api/v1/log/entries":
            self._send(201, fake.log_dsse(json.loads(body)))
        elif self.path == "/auth/device/code":
            self._send(200, fake.device_authorize(dict(urllib.parse.parse_qsl(body.decode()))))
        elif self.path == "/auth/token":
            status, answer = fake.device_token(dict(urllib.parse.parse_qsl(body.decode())))
            self._send(status, answer)
        else:
            self._send(404, {"message": "not found"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeSigstore


@contextmanager
def serve() -> Iterator[FakeSigstore]:
    fake = FakeSigstore()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.fake = fake
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
