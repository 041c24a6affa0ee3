"""Fixtures and hooks shared by aicr-pytest's own test directories.

The backend-parametrized scenario machinery (:mod:`tests.harness.backend_fixtures`) is imported
here rather than listed in the root conftest's ``pytest_plugins``: in-process pytester runs collect the
bundled ``checks/`` directory, for which the root conftest.py is not top-level, and pytest refuses
``pytest_plugins`` there. Defining the session-scoped ``controlplane`` once, here, gives
``tests/cluster`` and ``tests/controlplane`` one shared control plane per session (per xdist worker).
"""

import time
from typing import Any

import pytest

# In-process pytester runs restore sys.modules afterwards, so a module first imported inside one
# run is imported again by the next: two copies of cryptography's classes, and the simulator's
# TLS certificate code (``validate --simulate`` called in-process) then fails with a TypeError.
import aicr_pytest.testing.server.tls  # noqa: F401
from tests.harness.backend_fixtures import (
    controlplane,
    controlplane_session,
    k8s_backend,
    pytest_configure,
    pytest_generate_tests,
)

__all__ = [
    "controlplane",
    "controlplane_session",
    "k8s_backend",
    "pytest_configure",
    "pytest_generate_tests",
]

_SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Where the HTML report's browser test left its screenshots (printed by the xdist controller too)."""
    from tests.browser.cdp import artifacts_dir

    out = artifacts_dir(create=False)
    shots = (
        sorted(p for p in out.glob("*.png") if p.stat().st_mtime >= _SESSION_START) if out.is_dir() else []
    )
    if shots:
        terminalreporter.write_line(f"html report screenshots ({len(shots)}): {out}")
