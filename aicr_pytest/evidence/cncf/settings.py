"""What ``--cncf-submission``, ``--feature`` and ``--evidence-dir`` ask for, validated up front.

:func:`build_cncf_settings` runs before anything touches the cluster; every mistake is one
:class:`~aicr_pytest.core.errors.UsageError` line (exit 2; 4 under plain pytest), with AICR's texts.  A
usable ``--evidence-dir`` exists (it is created here) and is a writable
directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf.features import Feature, resolve_features

MSG_FEATURE_NEEDS_SUBMISSION: Final = "[INVALID_REQUEST] --feature requires --cncf-submission"
MSG_SUBMISSION_NEEDS_DIR: Final = "[INVALID_REQUEST] --cncf-submission requires --evidence-dir"
MSG_DIR_NOT_DIR: Final = "[INVALID_REQUEST] --evidence-dir {path}: exists and is not a directory"
MSG_DIR_CREATE: Final = "[INVALID_REQUEST] --evidence-dir {path}: cannot create the directory: {reason}"
MSG_DIR_NOT_WRITABLE: Final = "[INVALID_REQUEST] --evidence-dir {path}: the directory is not writable"


class CncfSettings(BaseModel):
    """``submission``: collect the features (path B); else, with ``evidence_dir``, render (path A)."""

    model_config = ConfigDict(frozen=True)

    submission: bool = False
    features: tuple[Feature, ...] = ()
    evidence_dir: Path | None = None

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
    submission: bool | None, features: Sequence[str] | None, evidence_dir: str | Path | None
) -> CncfSettings:
    """Validate the three options in AICR's order; raises :class:`UsageError`."""
    given_dir = evidence_dir if evidence_dir not in (None, "") else None
    if submission and given_dir is None:
        raise UsageError(MSG_SUBMISSION_NEEDS_DIR)
    if features and not submission:
        raise UsageError(MSG_FEATURE_NEEDS_SUBMISSION)
    resolved = resolve_features(features) if submission else ()
    directory = check_evidence_dir(given_dir) if given_dir is not None else None
    return CncfSettings(submission=bool(submission), features=resolved, evidence_dir=directory)


__all__ = [
    "MSG_DIR_CREATE",
    "MSG_DIR_NOT_DIR",
    "MSG_DIR_NOT_WRITABLE",
    "MSG_FEATURE_NEEDS_SUBMISSION",
    "MSG_SUBMISSION_NEEDS_DIR",
    "CncfSettings",
    "build_cncf_settings",
    "check_evidence_dir",
]
