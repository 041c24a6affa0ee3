"""pytest fixture for the real control plane (:mod:`tests.harness.controlplane`).

Import it into a conftest.py: ``from tests.harness.controlplane_fixtures import controlplane``.

When the binaries are missing (no Go toolchain, build not run) the fixture skips with the reason;
``AICR_REQUIRE_CONTROLPLANE=1`` (set by CI) turns that skip into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.harness.controlplane import (
    ControlPlane,
    ControlPlaneUnavailable,
    find_binaries,
    start_controlplane,
)

REQUIRE_ENV = "AICR_REQUIRE_CONTROLPLANE"


def controlplane_required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason``, or fail when ``AICR_REQUIRE_CONTROLPLANE=1``."""
    if controlplane_required():
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 makes this a failure", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def controlplane() -> Iterator[ControlPlane]:
    """A running etcd + kube-apiserver + controller-manager + scheduler + kwok, shared by the session."""
    try:
        binaries = find_binaries()
    except ControlPlaneUnavailable as e:
        skip_or_fail(str(e))
        raise AssertionError("unreachable") from e
    from tests.harness.backends import profile_crds

    cp = start_controlplane(binaries, crds=profile_crds())
    print(f"\ncontrol plane ready in {cp.start_seconds:.1f}s at {cp.server} (workdir {cp.workdir})")
    try:
        yield cp
    finally:
        cp.stop()
