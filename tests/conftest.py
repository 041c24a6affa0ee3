"""Fixtures and hooks shared by aicr-pytest's own test directories.

The backend-parametrized scenario machinery (:mod:`tests.harness.backend_fixtures`) is imported
here rather than listed in the root conftest's ``pytest_plugins``: in-process pytester runs collect the
bundled ``checks/`` directory, for which the root conftest.py is not top-level, and pytest refuses
``pytest_plugins`` there. Defining the session-scoped ``controlplane`` once, here, gives
``tests/cluster`` and ``tests/controlplane`` one shared control plane per session (per xdist worker).
"""

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# In-process pytester runs restore sys.modules afterwards, so a module first imported inside one
# run is imported again by the next: two copies of cryptography's classes, and the simulator's
# TLS certificate code (``validate --simulate`` called in-process) then fails with a TypeError.
# The same holds for the run's hooks and features, which the plugin imports only when a run is
# asked for: the next run would mix one copy's stash keys with a fresh copy's (the plugin state
# looks absent); a family a unit test imported would catch another copy's exception types than
# the facade raises, so the facade and the health family are imported once here too.
import aicr_pytest.health.cluster
import aicr_pytest.kube
import aicr_pytest.plugin.features
import aicr_pytest.plugin.fixtures
import aicr_pytest.plugin.hooks
import aicr_pytest.testing.server.tls  # noqa: F401
from tests.harness import limits
from tests.harness.backend_fixtures import (
    controlplane,
    controlplane_session,
    k8s_backend,
    pytest_configure,
    pytest_generate_tests,
)
from tests.harness.limits import pytest_timeout_set_timer

__all__ = [
    "controlplane",
    "controlplane_session",
    "k8s_backend",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_timeout_set_timer",
]


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` for the test's duration, however the suite was started.

    Python installs that handler at start-up only where SIGINT was not inherited as ignored, and a
    background job of a non-interactive shell (as some CI runners start jobs) inherits it ignored:
    a test that sends itself SIGINT would go on waiting for what it waits on. Child processes started
    meanwhile get SIGINT's default action (exec resets a handled signal; an ignored one stays ignored).
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def sighup_default() -> Iterator[None]:
    """SIGHUP has its default action for the test's duration, however the suite was started: under
    ``nohup`` it is inherited as ignored, and aicr-pytest rightly leaves an ignored SIGHUP ignored,
    so a test of how a run ends on SIGHUP (a closed terminal) would see none. Child processes started
    meanwhile inherit the default action too."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)


_SESSION_START = time.time()

#: the start of the skip reason of the ``reference_dir`` fixture (the repository's conftest.py)
REFERENCE_SKIP = "reference data not found at "


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that reads ``../shared/reference`` is a ``compat`` test, named so (``-m compat``,
    ``-m "not compat"``); then the per-stage time limits."""
    for item in items:
        if "reference_dir" in getattr(item, "fixturenames", ()) and item.get_closest_marker("compat") is None:
            item.add_marker(pytest.mark.compat)
    limits.pytest_collection_modifyitems(config, items)


def reference_skips(terminalreporter: Any) -> int:
    """How many tests skipped because ``../shared/reference`` is missing."""
    count = 0
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        if REFERENCE_SKIP in reason:
            count += 1
    return count


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line counting the tests skipped for missing reference data (and how to get it); where
    the HTML report's browser test left its screenshots (printed by the xdist controller too)."""
    skipped = reference_skips(terminalreporter)
    if skipped:
        repo = Path(__file__).resolve().parents[1]
        shared = Path(os.environ.get("AICR_SHARED_DIR", repo.parent / "shared"))
        terminalreporter.write_line(
            f"{skipped} compat test(s) skipped: AICR's reference data is not at {shared / 'reference'} "
            "(check out the shared reference data beside this repository, or set AICR_SHARED_DIR; "
            "see CONTRIBUTING.md)"
        )
    from tests.browser.cdp import artifacts_dir

    out = artifacts_dir(create=False)
    shots = (
        sorted(p for p in out.glob("*.png") if p.stat().st_mtime >= _SESSION_START) if out.is_dir() else []
    )
    if shots:
        terminalreporter.write_line(f"html report screenshots ({len(shots)}): {out}")
