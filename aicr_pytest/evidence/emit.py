"""The emission pipeline of ``--emit-attestation``: bundle → (push → sign → referrer) → pointer.

:func:`prepare` runs before any check (it validates the options and shows the identity-disclosure
notice when signing will be interactive); :func:`emit` runs after the run's CTRF report is final,
also when checks failed — a failed run is evidence too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from aicr_pytest.core.recipe import Recipe
from aicr_pytest.core.snapshot import Snapshot
from aicr_pytest.evidence import bundle, ociref, oidc, validatorrefs
from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import pointer as pointer_mod
from aicr_pytest.evidence.settings import EvidenceSettings

Write = Callable[[str], None]
#: environment variables whose values must never appear in a bundle file
SECRET_ENV = ("HF_TOKEN", "COSIGN_IDENTITY_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "SIGSTORE_ID_TOKEN")


class EvidenceError(Exception):
    """Emission failed (one printable line; never contains a token)."""


@dataclass(frozen=True)
class Plan:
    settings: EvidenceSettings
    push_ref: ociref.Reference | None = None
    user_bom: bytes | None = None
    source: oidc.Source | None = None  # None: nothing is signed


@dataclass(frozen=True)
class Emitted:
    pointer_path: Path
    copy_to: str
    summary_dir: Path
    reference: str = ""
    digest: str = ""
    signed: bool = False


def prepare(
    settings: EvidenceSettings,
    env: Mapping[str, str],
    *,
    write: Write,
    read_line: Callable[[], str],
    stdin_is_tty: bool,
) -> Plan | None:
    """Validate the options (``UsageError``) and run the disclosure gate (:class:`EvidenceError`)."""
    from aicr_pytest.evidence import bom as bom_mod

    if not settings.active:
        if settings.given_without_emit:
            write(f"warning: {', '.join(settings.given_without_emit)} ignored without --emit-attestation")
        return None
    push_ref = ociref.parse(settings.push) if settings.push else None
    user_bom = bom_mod.load_user_bom(settings.bom) if settings.bom else None
    if settings.insecure_tls and settings.plain_http:
        write("warning: --insecure-tls is ignored with --plain-http")
    elif settings.insecure_tls:
        write("warning: --insecure-tls: the registry's TLS certificate is not verified")
    source: oidc.Source | None = None
    if push_ref is not None and not settings.no_sign:
        source = oidc.select_source(settings.identity_token, env, settings.oidc_device_flow)
        if source in oidc.INTERACTIVE:
            fulcio, rekor = _service_names(env, write)
            try:
                oidc.disclosure_gate(
                    source,
                    assume_yes=settings.assume_yes,
                    stdin_is_tty=stdin_is_tty,
                    read_line=read_line,
                    write=write,
                    fulcio_url=fulcio,
                    rekor_url=rekor,
                )
            except oidc.OIDCError as err:
                raise EvidenceError(str(err)) from None
    return Plan(settings, push_ref, user_bom, source)


def _service_names(env: Mapping[str, str], write: Write) -> tuple[str, str]:
    from aicr_pytest.evidence import signing

    try:
        fulcio, rekor, _ = signing.service_urls(signing.load_trust_config(env, offline=True, warn=write))
    except Exception:
        return "https://fulcio.sigstore.dev", "https://rekor.sigstore.dev"
    return fulcio, rekor


def secret_values(settings: EvidenceSettings, env: Mapping[str, str]) -> list[str]:
    values = [settings.identity_token or ""] + [env.get(name, "") for name in SECRET_ENV]
    return [v for v in values if v]


def emit(
    plan: Plan,
    *,
    report: Mapping[str, Any],
    recipe: Recipe,
    snapshot: Snapshot | None,
    registry_entries: Sequence[Mapping[str, Any]],
    tool_version: str,
    env: Mapping[str, str],
    write: Write,
    now: datetime | None = None,
    validator_images: Sequence[str] = (),
) -> Emitted:
    """Build the bundle, push and sign it when asked, write the pointer; :class:`EvidenceError` on failure.

    ``validator_images``: the validator image references the run used (none for aicr-pytest's own
    in-process checks); a mutable one refuses emission unless ``--allow-mutable-validator-tags``
    (:mod:`~aicr_pytest.evidence.validatorrefs`)."""
    from aicr_pytest.evidence import oci

    settings = plan.settings
    assert settings.out_dir is not None
    refused = None if settings.allow_mutable_validator_tags else validatorrefs.refusal(validator_images)
    if refused is not None:
        raise EvidenceError(refused)
    inputs = bundle.BundleInputs(
        recipe=recipe,
        snapshot=snapshot,
        report=report,
        tool_version=tool_version,
        full=settings.full,
        user_bom=plan.user_bom,
        registry_entries=registry_entries,
        secrets=secret_values(settings, env),
        now=now,
        predicate_type=settings.predicate_type,
    )
    try:
        built = bundle.build(settings.out_dir, inputs)
    except (OSError, ValueError) as err:
        raise EvidenceError(f"cannot write the evidence bundle to {settings.out_dir}: {err}") from None
    write(
        f"evidence bundle built summaryDir={built.summary_dir} recipe={built.recipe_name} "
        f"subjectDigest={built.recipe_digest}"
    )
    attested_at = datetime.strptime(built.predicate["attestedAt"], "%Y-%m-%dT%H:%M:%SZ")
    reference = digest = identity = issuer = ""
    log_index = 0
    if plan.push_ref is not None:
        ref = plan.push_ref
        tag = ref.tag or ociref.derived_tag(built.recipe_name, built.manifest_digest)
        try:
            client = oci.RegistryClient(
                ref.with_tag(tag), plain_http=settings.plain_http, insecure_tls=settings.insecure_tls
            )
            pushed = oci.push_bundle(client, tag, built.summary_dir, tool_version)
        except oci.RegistryError as err:
            raise EvidenceError(f"push to {ref.name}:{tag} failed: {err}") from None
        reference, digest = pushed.reference, pushed.descriptor.digest
        write(f"evidence bundle pushed reference={reference} digest={digest}")
        if plan.source is not None:
            identity, issuer, log_index = _sign_and_attach(plan, client, pushed, built, env, write)
    p = pointer_mod.build(
        built.recipe_name,
        attested_at,
        oci=reference,
        digest=digest,
        identity=identity,
        issuer=issuer,
        rekor_log_index=log_index,
        predicate_type=built.predicate_type,
    )
    path = settings.out_dir / C.POINTER_FILE
    try:
        pointer_mod.write_atomic(path, p.render())
        copy_to = pointer_mod.copy_to(p)
    except (OSError, ValueError) as err:
        raise EvidenceError(f"cannot write {path}: {err}") from None
    write(f"evidence pointer written path={path} copyTo={copy_to}")
    return Emitted(path, copy_to, built.summary_dir, reference, digest, bool(identity))


def _sign_and_attach(
    plan: Plan,
    client: Any,
    pushed: Any,
    built: bundle.BuiltBundle,
    env: Mapping[str, str],
    write: Write,
) -> tuple[str, str, int]:
    from aicr_pytest.evidence import oci, signing
    from aicr_pytest.evidence.predicate import statement_bytes

    assert plan.source is not None
    try:
        trust = signing.load_trust_config(env, offline=False, warn=write)
        _, _, issuer_url = signing.service_urls(trust)
    except Exception as err:
        raise EvidenceError(
            f"cannot load the Sigstore signing configuration: {type(err).__name__}: {err}"
        ) from None
    try:
        token = oidc.resolve_token(
            plan.source, identity_token=plan.settings.identity_token, env=env, issuer=issuer_url, write=write
        )
    except oidc.OIDCError as err:
        raise EvidenceError(f"no OIDC identity token: {err}") from None
    statement = statement_bytes(
        pushed.reference,
        pushed.descriptor.digest.removeprefix("sha256:"),
        built.predicate,
        built.predicate_type,
    )
    try:
        signed = signing.sign_statement(statement, token, trust)
    except signing.SigningError as err:
        raise EvidenceError(str(err)) from None
    target = built.summary_dir / C.ATTESTATION_FILE
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(signed.bundle_json)
    try:
        attached = oci.attach_signature(client, pushed.descriptor, signed.bundle_json, built.predicate_type)
    except oci.RegistryError as err:
        raise EvidenceError(f"attaching the Sigstore Bundle to {pushed.reference} failed: {err}") from None
    how = "" if attached.via_referrers_api else " via=tag-schema-fallback"
    write(
        f"Sigstore Bundle attached as OCI Referrer referrerDigest={attached.descriptor.digest} "
        f"mainArtifactDigest={pushed.descriptor.digest}{how}"
    )
    return signed.identity, signed.issuer, signed.rekor_log_index
