"""The evidence options, declared once for both entry points (plain pytest and ``aicr-pytest validate``).

Each :class:`OptionSpec` names its flags, destination, value kind, environment variable and help;
the plugin registers them with ``pytest_addoption`` and the CLI with argparse from this one table.
Environment variables are read when the settings are built (:func:`settings_from`), never later.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

TRUE_VALUES = ("1", "true", "yes", "on", "t", "y")


@dataclass(frozen=True)
class OptionSpec:
    flags: tuple[str, ...]
    dest: str
    kind: Literal["value", "flag"]
    help: str
    metavar: str | None = None
    env: str | None = None


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        ("--emit-attestation",),
        "aicr_evidence_out",
        "value",
        "write a recipe evidence bundle (pointer.yaml + summary-bundle/) to DIR; minimized unless --full",
        metavar="DIR",
    ),
    OptionSpec(
        ("--full",),
        "aicr_evidence_full",
        "flag",
        "evidence: publish the raw snapshot and CTRF (no minimization, no redaction block)",
    ),
    OptionSpec(
        ("--bom",),
        "aicr_evidence_bom",
        "value",
        "evidence: embed this CycloneDX JSON file (at most 8 MiB) instead of the generated BOM",
        metavar="PATH",
    ),
    OptionSpec(
        ("--push",),
        "aicr_evidence_push",
        "value",
        "evidence: push the bundle to this OCI reference and sign it keyless "
        "(tag optional: derived when absent)",
        metavar="OCI_REF",
    ),
    OptionSpec(
        ("--identity-token",),
        "aicr_evidence_identity_token",
        "value",
        "evidence: OIDC identity token for keyless signing (env COSIGN_IDENTITY_TOKEN)",
        metavar="TOKEN",
        env="COSIGN_IDENTITY_TOKEN",
    ),
    OptionSpec(
        ("--oidc-device-flow",),
        "aicr_evidence_device_flow",
        "flag",
        "evidence: get the OIDC token with the device-code flow instead of a browser "
        "(env AICR_OIDC_DEVICE_FLOW)",
        env="AICR_OIDC_DEVICE_FLOW",
    ),
    OptionSpec(
        ("--plain-http",),
        "aicr_evidence_plain_http",
        "flag",
        "evidence: talk HTTP to the registry (local test registries only)",
    ),
    OptionSpec(
        ("--insecure-tls",),
        "aicr_evidence_insecure_tls",
        "flag",
        "evidence: do not verify the registry's TLS certificate (self-signed registries)",
    ),
    OptionSpec(
        ("--no-sign",),
        "aicr_evidence_no_sign",
        "flag",
        "evidence: with --push, push the bundle unsigned (no OIDC)",
    ),
    OptionSpec(
        ("--yes", "--assume-yes"),
        "aicr_evidence_assume_yes",
        "flag",
        "evidence: skip the identity-disclosure confirmation before keyless signing (env AICR_ASSUME_YES)",
        env="AICR_ASSUME_YES",
    ),
)


def pytest_kwargs(spec: OptionSpec) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"dest": spec.dest, "help": spec.help}
    if spec.kind == "flag":
        kwargs["action"] = "store_true"
        kwargs["default"] = False
    else:
        kwargs["metavar"] = spec.metavar
        kwargs["default"] = None
    return kwargs


argparse_kwargs = pytest_kwargs


@dataclass(frozen=True)
class EvidenceSettings:
    out_dir: Path | None = None
    full: bool = False
    bom: str | None = None
    push: str | None = None
    identity_token: str | None = field(default=None, repr=False)
    oidc_device_flow: bool = False
    plain_http: bool = False
    insecure_tls: bool = False
    no_sign: bool = False
    assume_yes: bool = False

    @property
    def active(self) -> bool:
        return self.out_dir is not None

    @property
    def given_without_emit(self) -> list[str]:
        """Evidence flags set on the command line that do nothing without --emit-attestation."""
        if self.active:
            return []
        names = []
        for name, flag in (
            ("full", "--full"),
            ("bom", "--bom"),
            ("push", "--push"),
            ("no_sign", "--no-sign"),
        ):
            if getattr(self, name):
                names.append(flag)
        return names


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in TRUE_VALUES


def settings_from(values: Mapping[str, Any], env: Mapping[str, str]) -> EvidenceSettings:
    """Build the settings from option values keyed by ``dest`` (flags win over environment variables)."""

    def get(dest: str) -> Any:
        return values.get(dest)

    token = get("aicr_evidence_identity_token") or env.get("COSIGN_IDENTITY_TOKEN") or None
    out = get("aicr_evidence_out")
    return EvidenceSettings(
        out_dir=Path(out).expanduser() if out else None,
        full=bool(get("aicr_evidence_full")),
        bom=get("aicr_evidence_bom"),
        push=get("aicr_evidence_push"),
        identity_token=token,
        oidc_device_flow=bool(get("aicr_evidence_device_flow"))
        or _truthy(env.get("AICR_OIDC_DEVICE_FLOW", "")),
        plain_http=bool(get("aicr_evidence_plain_http")),
        insecure_tls=bool(get("aicr_evidence_insecure_tls")),
        no_sign=bool(get("aicr_evidence_no_sign")),
        assume_yes=bool(get("aicr_evidence_assume_yes")) or _truthy(env.get("AICR_ASSUME_YES", "")),
    )


def forward_args(values: Mapping[str, Any], specs: Sequence[OptionSpec] = OPTIONS) -> list[str]:
    """The pytest arguments that carry these option values (``aicr-pytest validate`` → ``pytest.main``)."""
    args: list[str] = []
    for spec in specs:
        value = values.get(spec.dest)
        if spec.kind == "flag":
            if value:
                args.append(spec.flags[0])
        elif value is not None:
            args += [spec.flags[0], str(value)]
    return args
