"""What ``--cncf-submission``, ``--feature``, ``--evidence-dir`` and ``--cncf-checklist`` (with the
product metadata) ask for, validated up front.

:func:`build_cncf_settings` runs before anything touches the cluster; every mistake is one
:class:`~aicr_pytest.core.errors.UsageError` line (exit 2; 4 under plain pytest), with AICR's texts.  A
usable ``--evidence-dir`` exists (it is created here) and is a writable
directory.  A ``--cncf-checklist`` template is loaded and validated here
(:func:`~aicr_pytest.evidence.cncf.checklist.load_checklist`); it needs ``--cncf-submission``, and
the metadata values (:data:`METADATA_FLAGS`) need the template they fill.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf.checklist import Checklist, load_checklist
from aicr_pytest.evidence.cncf.features import Feature, resolve_features
from aicr_pytest.evidence.cncf.metadata import METADATA_FLAGS, METADATA_OPTIONS

MSG_FEATURE_NEEDS_SUBMISSION: Final = "[INVALID_REQUEST] --feature requires --cncf-submission"
MSG_SUBMISSION_NEEDS_DIR: Final = "[INVALID_REQUEST] --cncf-submission requires --evidence-dir"
MSG_DIR_NOT_DIR: Final = "[INVALID_REQUEST] --evidence-dir {path}: exists and is not a directory"
MSG_DIR_CREATE: Final = "[INVALID_REQUEST] --evidence-dir {path}: cannot create the directory: {reason}"
MSG_DIR_NOT_WRITABLE: Final = "[INVALID_REQUEST] --evidence-dir {path}: the directory is not writable"
MSG_CHECKLIST_NEEDS_SUBMISSION: Final = "[INVALID_REQUEST] --cncf-checklist requires --cncf-submission"
MSG_METADATA_NEEDS_CHECKLIST: Final = "[INVALID_REQUEST] {flag} requires --cncf-checklist"


class CncfSettings(BaseModel):
    """``submission``: collect the features (path B); else, with ``evidence_dir``, render (path A).
    ``checklist``: fill it into ``PRODUCT.yaml`` with ``metadata`` (field -> value) after collecting."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    submission: bool = False
    features: tuple[Feature, ...] = ()
    evidence_dir: Path | None = None
    checklist: Checklist | None = None
    metadata: dict[str, str] = {}

    @property
    def render_after_run(self) -> bool:
        return self.evidence_dir is not None and not self.submission


def check_evidence_dir(raw: str | Path) -> Path:
    """The evidence directory, created if needed; a :class:`UsageError` when it cannot be used."""
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(MSG_DIR_NOT_DIR.format(path=raw))
    if not path.exists():
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(MSG_DIR_CREATE.format(path=raw, reason=exc.strerror or exc)) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(MSG_DIR_NOT_WRITABLE.format(path=raw))
    return path


def build_cncf_settings(
    submission: bool | None,
    features: Sequence[str] | None,
    evidence_dir: str | Path | None,
    checklist: str | Path | None = None,
    metadata: Mapping[str, str | None] | None = None,
    should: bool | None = None,
) -> CncfSettings:
    """Validate the options: AICR's three in AICR's order, then the template and its metadata (the
    template is read before the directory is created); raises :class:`UsageError`.  ``should``
    (``--cncf-should``): the SHOULD features join the default set."""
    given_dir = evidence_dir if evidence_dir not in (None, "") else None
    given_checklist = checklist if checklist not in (None, "") else None
    given_meta = {k: v for k, v in (metadata or {}).items() if v is not None}
    if submission and given_dir is None:
        raise UsageError(MSG_SUBMISSION_NEEDS_DIR)
    if features and not submission:
        raise UsageError(MSG_FEATURE_NEEDS_SUBMISSION)
    if given_checklist is not None and not submission:
        raise UsageError(MSG_CHECKLIST_NEEDS_SUBMISSION)
    if given_meta and given_checklist is None:
        first = next(name for name in METADATA_FLAGS if name in given_meta)
        raise UsageError(MSG_METADATA_NEEDS_CHECKLIST.format(flag=METADATA_FLAGS[first]))
    resolved = resolve_features(features, should=bool(should)) if submission else ()
    template = load_checklist(given_checklist) if given_checklist is not None else None
    directory = check_evidence_dir(given_dir) if given_dir is not None else None
    return CncfSettings(
        submission=bool(submission),
        features=resolved,
        evidence_dir=directory,
        checklist=template,
        metadata=given_meta,
    )


def settings_from_values(values: Mapping[str, Any]) -> CncfSettings:
    """:func:`build_cncf_settings` from a run's option values, keyed by the option table's names
    (``cncf_submission``, ``feature``, ``evidence_dir``, ``cncf_checklist``, ``cncf_<field>``,
    ``cncf_should``)."""
    return build_cncf_settings(
        values.get("cncf_submission"),
        values.get("feature"),
        values.get("evidence_dir"),
        values.get("cncf_checklist"),
        {field: values.get(f"cncf_{field}") for field in METADATA_FLAGS},
        values.get("cncf_should"),
    )


__all__ = [
    "METADATA_FLAGS",
    "METADATA_OPTIONS",
    "MSG_CHECKLIST_NEEDS_SUBMISSION",
    "MSG_DIR_CREATE",
    "MSG_DIR_NOT_DIR",
    "MSG_DIR_NOT_WRITABLE",
    "MSG_FEATURE_NEEDS_SUBMISSION",
    "MSG_METADATA_NEEDS_CHECKLIST",
    "MSG_SUBMISSION_NEEDS_DIR",
    "CncfSettings",
    "build_cncf_settings",
    "check_evidence_dir",
    "settings_from_values",
]
