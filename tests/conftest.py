"""Fixtures and hooks shared by aicr-pytest's own test directories.

The backend-parametrized scenario machinery (:mod:`tests.harness.backend_fixtures`) is imported
here rather than listed in the root conftest's ``pytest_plugins``: in-process pytester runs collect the
bundled ``checks/`` directory, for which the root conftest.py is not top-level, and pytest refuses
``pytest_plugins`` there. Defining the session-scoped ``controlplane`` once, here, gives
``tests/cluster`` and ``tests/controlplane`` one shared control plane per session (per xdist worker).
"""

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
