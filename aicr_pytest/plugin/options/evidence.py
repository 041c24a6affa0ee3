"""Rows: evidence a validation run writes: the evidence directory, CNCF AI-conformance evidence
and its submission kit, and recipe evidence bundles (these fill ``EvidenceSettings``)."""

from __future__ import annotations

from aicr_pytest.evidence.cncf.metadata import METADATA_OPTIONS
from aicr_pytest.plugin.options.spec import Option

#: the rows, in the order the help lists them
ROWS: tuple[Option, ...] = (
    Option(
        "evidence_dir",
        ("--evidence-dir",),
        "write evidence files here: plots, logs and the CNCF evidence markdown (one file per "
        "conformance check plus index.md; with --cncf-submission, one per feature)",
        setting="evidence_dir",
        metavar="DIR",
    ),
    # --- CNCF AI-conformance evidence: read by plugin/cncf_wiring.py ---------------------
    Option(
        "cncf_submission",
        ("--cncf-submission",),
        "collect CNCF AI-conformance submission evidence (one file per feature) into --evidence-dir "
        "instead of running the phases",
        setting=None,
        action="store_true",
        default=False,
    ),
    Option(
        "feature",
        ("--feature",),
        "with --cncf-submission: collect only this feature (repeatable; name, alias, CNCF requirement "
        "id or all)",
        setting=None,
        default_text="every feature",
        # pytest-xdist owns -f (--looponfail) under plain pytest
        validate_flags=("-f", "--feature"),
        action="append",
        metavar="FEATURE",
    ),
    Option(
        "cncf_should",
        ("--cncf-should",),
        "add the CNCF SHOULD checks (gpu-sharing, driver-runtime-management, workload-sandboxing, "
        "high-performance-networking) to the conformance phase, and with --cncf-submission to the "
        "features collected; an aicr-pytest extension",
        setting="cncf_should",
        action="store_true",
        default=False,
        config_key="execution.cncfShould",
    ),
    # --- CNCF submission kit: the checklist template and PRODUCT.yaml's metadata -----------
    Option(
        "cncf_checklist",
        ("--cncf-checklist",),
        "with --cncf-submission: the program's checklist template (KubernetesAIConformance-1.xx.yaml) "
        "to fill into PRODUCT.yaml, with results/junit.xml and results/e2e.log, in --evidence-dir",
        setting=None,
        metavar="FILE",
        config_key="cncf.checklist",
    ),
    *(
        Option(
            f"cncf_{field}",
            (flag,),
            f"with --cncf-checklist: PRODUCT.yaml's metadata.{key}",
            setting=None,
            metavar=metavar,
            config_key=f"cncf.{key}",
        )
        for field, flag, key, metavar in METADATA_OPTIONS
    ),
    # --- recipe evidence bundles: fill EvidenceSettings ---------------------------------
    Option(
        "emit_attestation",
        ("--emit-attestation",),
        "write a recipe evidence bundle (pointer.yaml + summary-bundle/) to DIR; minimized unless --full",
        setting="out_dir",
        model="evidence",
        metavar="DIR",
    ),
    Option(
        "full",
        ("--full",),
        "evidence: publish the raw snapshot and CTRF (no minimization, no redaction block)",
        setting="full",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "bom",
        ("--bom",),
        "evidence: embed this CycloneDX JSON file (at most 8 MiB) instead of the generated BOM",
        setting="bom",
        model="evidence",
        metavar="PATH",
    ),
    Option(
        "push",
        ("--push",),
        "evidence: push the bundle to this OCI reference and sign it keyless "
        "(tag optional: derived when absent)",
        setting="push",
        model="evidence",
        metavar="OCI_REF",
    ),
    Option(
        "identity_token",
        ("--identity-token",),
        "evidence: OIDC identity token for keyless signing",
        setting="identity_token",
        model="evidence",
        env="COSIGN_IDENTITY_TOKEN",
        metavar="TOKEN",
    ),
    Option(
        "oidc_device_flow",
        ("--oidc-device-flow",),
        "evidence: get the OIDC token with the device-code flow instead of a browser",
        setting="oidc_device_flow",
        model="evidence",
        action="store_true",
        default=False,
        env="AICR_OIDC_DEVICE_FLOW",
    ),
    Option(
        "plain_http",
        ("--plain-http",),
        "evidence: talk HTTP to the registry (local test registries only)",
        setting="plain_http",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "insecure_tls",
        ("--insecure-tls",),
        "evidence: do not verify the registry's TLS certificate (self-signed registries)",
        setting="insecure_tls",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "no_sign",
        ("--no-sign",),
        "evidence: with --push, push the bundle unsigned (no OIDC)",
        setting="no_sign",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "predicate_version",
        ("--predicate-version",),
        "evidence: the recipe-evidence predicate type to write: 1 (v1) or 3 (v3, today's AICR: the "
        "recipe digest leaves out metadata.version)",
        setting="predicate_version",
        model="evidence",
        default="1",
        metavar="N",
    ),
    Option(
        "allow_mutable_validator_tags",
        ("--allow-mutable-validator-tags",),
        "evidence: emit even when a validator image is a mutable tag (AICR's opt-out; no env var or "
        "config key by design; aicr-pytest runs no validator image, so its own runs never need it)",
        setting="allow_mutable_validator_tags",
        model="evidence",
        action="store_true",
        default=False,
    ),
    Option(
        "assume_yes",
        ("--yes", "--assume-yes"),
        "evidence: skip the identity-disclosure confirmation before keyless signing",
        setting="assume_yes",
        model="evidence",
        action="store_true",
        default=False,
        env="AICR_ASSUME_YES",
    ),
)
