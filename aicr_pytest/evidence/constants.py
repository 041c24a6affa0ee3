"""Names, media types, size caps and OIDs of recipe evidence bundles (no logic here).

Field names and values follow AICR's recipe-evidence/v1 format, so AICR's verifier can read what we
write and ours reads what AICR writes.  Today's AICR writes recipe-evidence/v3 (its
``pkg/evidence/attestation/types.go``): the same predicate, with the recipe digest taken over the
recipe without ``metadata.version``; v2 is its profiled-recipe type.  ``evidence verify`` reads all
three; a run writes v1 unless ``--predicate-version 3`` asks for v3.
"""

from __future__ import annotations

from typing import Final

PREDICATE_TYPE: Final = "https://aicr.run/recipe-evidence/v1"
PREDICATE_TYPE_V2: Final = "https://aicr.run/recipe-evidence/v2"
PREDICATE_TYPE_V3: Final = "https://aicr.run/recipe-evidence/v3"
#: every predicate type ``evidence verify`` reads
PREDICATE_TYPES: Final = (PREDICATE_TYPE, PREDICATE_TYPE_V2, PREDICATE_TYPE_V3)
#: ``--predicate-version`` → the predicate type a run writes (v2 needs a profile block: not offered)
EMITTED_PREDICATE_TYPES: Final = {1: PREDICATE_TYPE, 3: PREDICATE_TYPE_V3}
STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
INTOTO_PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
SCHEMA_VERSION: Final = "1.0.0"
POINTER_SCHEMA_VERSION: Final = "1.0.0"
MANIFEST_SCHEMA_VERSION: Final = "1.0.0"

SUMMARY_DIR: Final = "summary-bundle"
POINTER_FILE: Final = "pointer.yaml"
RECIPE_FILE: Final = "recipe.yaml"
SNAPSHOT_FILE: Final = "snapshot.yaml"
BOM_FILE: Final = "bom.cdx.json"
CTRF_DIR: Final = "ctrf"
MANIFEST_FILE: Final = "manifest.json"
STATEMENT_FILE: Final = "statement.intoto.json"
ATTESTATION_FILE: Final = "attestation.intoto.jsonl"
#: never listed in manifest.json (they are derived from, or sign, the listed files)
MANIFEST_EXCLUDED: Final = frozenset({MANIFEST_FILE, STATEMENT_FILE, ATTESTATION_FILE})

PHASES: Final = ("deployment", "performance", "conformance")  # AICR's report order in verify

# OCI
MT_MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
MT_INDEX: Final = "application/vnd.oci.image.index.v1+json"
MT_EMPTY: Final = "application/vnd.oci.empty.v1+json"
MT_LAYER_TGZ: Final = "application/vnd.oci.image.layer.v1.tar+gzip"
ARTIFACT_TYPE: Final = "application/vnd.nvidia.aicr.artifact"
SIGSTORE_BUNDLE_TYPE: Final = "application/vnd.dev.sigstore.bundle.v0.3+json"
EMPTY_CONFIG: Final = b"{}"
EMPTY_DIGEST: Final = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
ANN_TITLE: Final = "org.opencontainers.image.title"
ANN_CREATED: Final = "org.opencontainers.image.created"
ANN_UNPACK: Final = "io.deis.oras.content.unpack"
ANN_CONTENT_DIGEST: Final = "io.deis.oras.content.digest"
FIXED_CREATED: Final = "1970-01-01T00:00:00Z"

# size caps (bytes)
MAX_BOM: Final = 8 << 20
MAX_POINTER: Final = 1 << 20
MAX_MANIFEST_JSON: Final = 1 << 20
MAX_OCI_MANIFEST: Final = 1 << 20
MAX_SIGSTORE_BUNDLE: Final = 10 << 20
MAX_STATEMENT: Final = 10 << 20
MAX_CTRF: Final = 10 << 20
MAX_LAYER: Final = 256 << 20
MAX_UNPACKED: Final = 512 << 20

# Fulcio certificate extensions
OID_ISSUER_V1: Final = "1.3.6.1.4.1.57264.1.1"  # raw bytes (legacy)
OID_ISSUER_V2: Final = "1.3.6.1.4.1.57264.1.8"  # DER UTF8String
OID_OTHERNAME_SAN: Final = "1.3.6.1.4.1.57264.1.7"

DEFAULT_OIDC_ISSUER: Final = "https://oauth2.sigstore.dev/auth"
OIDC_CLIENT_ID: Final = "sigstore"

#: test-only: a ClientTrustConfig JSON used instead of Sigstore's public-good instance (never set by default)
TEST_TRUST_CONFIG_ENV: Final = "AICR_PYTEST_TEST_TRUST_CONFIG"
