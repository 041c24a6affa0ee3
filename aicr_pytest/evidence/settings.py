"""What the evidence options ask for, as the evidence pipeline reads it.

The options themselves (flags, environment variables, help) are entries of the option table
(:mod:`aicr_pytest.plugin.options`, those filling ``EvidenceSettings``); an entry point resolves
them (flag, then environment variable, then default) and hands the values, keyed by field, to
:func:`build_evidence_settings`.  Nothing here reads the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence import constants as C

MSG_BAD_PREDICATE_VERSION: Final = (
    'invalid --predicate-version "{value}": '
    "want 1 (recipe-evidence/v1, the default) or 3 (recipe-evidence/v3)"
)


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
    #: ``--predicate-version``: which recipe-evidence predicate type the bundle is written as
    predicate_version: int = 1
    #: ``--allow-mutable-validator-tags``: emit although a validator image is a mutable reference
    allow_mutable_validator_tags: bool = False

    @property
    def predicate_type(self) -> str:
        return C.EMITTED_PREDICATE_TYPES[self.predicate_version]

    @property
    def active(self) -> bool:
        return self.out_dir is not None

    @property
    def given_without_emit(self) -> list[str]:
        """Evidence flags set on the command line that do nothing without --emit-attestation."""
        if self.active:
            return []
        names = ["--predicate-version"] if self.predicate_version != 1 else []
        for name, flag in (
            ("full", "--full"),
            ("bom", "--bom"),
            ("push", "--push"),
            ("no_sign", "--no-sign"),
            ("allow_mutable_validator_tags", "--allow-mutable-validator-tags"),
        ):
            if getattr(self, name):
                names.append(flag)
        return names


def predicate_version(value: object) -> int:
    """``--predicate-version`` as given (``None`` or ``""``: 1, the default); else :class:`UsageError`."""
    if value is None or value == "":
        return 1
    number = str(value).removeprefix("v")
    if number not in {str(v) for v in C.EMITTED_PREDICATE_TYPES}:
        raise UsageError(MSG_BAD_PREDICATE_VERSION.format(value=value))
    return int(number)


def build_evidence_settings(raw: Mapping[str, Any]) -> EvidenceSettings:
    """The settings from resolved option values keyed by field (an empty string counts as not given)."""
    out = raw.get("out_dir")
    return EvidenceSettings(
        out_dir=Path(out).expanduser() if out else None,
        full=bool(raw.get("full")),
        bom=raw.get("bom") or None,
        push=raw.get("push") or None,
        identity_token=raw.get("identity_token") or None,
        oidc_device_flow=bool(raw.get("oidc_device_flow")),
        plain_http=bool(raw.get("plain_http")),
        insecure_tls=bool(raw.get("insecure_tls")),
        no_sign=bool(raw.get("no_sign")),
        assume_yes=bool(raw.get("assume_yes")),
        predicate_version=predicate_version(raw.get("predicate_version")),
        allow_mutable_validator_tags=bool(raw.get("allow_mutable_validator_tags")),
    )


__all__ = [
    "MSG_BAD_PREDICATE_VERSION",
    "EvidenceSettings",
    "build_evidence_settings",
    "predicate_version",
]
