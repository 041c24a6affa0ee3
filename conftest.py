"""Repo-level fixtures for aicr-pytest's own test suite.

The plugin itself is registered through its ``pytest11`` entry point; never list it in
``pytest_plugins`` here (that would register it twice).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent
SHARED_DIR = Path(os.environ.get("AICR_SHARED_DIR", REPO_ROOT.parent / "shared"))
REFERENCE_DIR = SHARED_DIR / "reference"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """``../shared/reference``, read in place (never copied into the repo).

    Outside CI a missing directory skips with a visible reason; ``.ci/run`` sets
    ``AICR_REQUIRE_REFERENCE=1`` so the same situation fails instead.
    """
    if not REFERENCE_DIR.is_dir():
        reason = f"reference data not found at {REFERENCE_DIR} (set AICR_SHARED_DIR)"
        if os.environ.get("AICR_REQUIRE_REFERENCE") == "1":
            pytest.fail(reason + "; AICR_REQUIRE_REFERENCE=1 makes this a failure")
        pytest.skip(reason)
    return REFERENCE_DIR
