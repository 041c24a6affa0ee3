"""pytest wiring for scenario tests that run on both cluster backends (:mod:`tests.harness.backends`).

Import the fixtures and hooks into a conftest.py (``tests/conftest.py`` does), or list the module in
the top-level conftest's ``pytest_plugins``.

* ``k8s_backend`` -- a test that requests it is parametrized ``[fake]``, ``[controlplane]``; one
  marked ``@pytest.mark.fake_only("why")`` gets ``[fake]`` only (it is still counted, as fake-only);
* ``controlplane`` / ``controlplane_session`` -- the session's real control plane (one per xdist
  worker), skipped with the reason when the binaries are missing and failing instead when
  ``AICR_REQUIRE_CONTROLPLANE=1``;
* at the end of the run: ``backend scenarios: fake=N controlplane=M (fake-only: K)``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.backends import (
    BACKENDS,
    ControlPlaneBackend,
    ControlPlaneSession,
    FakeBackend,
    K8sBackend,
)
from tests.harness.controlplane import ControlPlane
from tests.harness.controlplane_fixtures import controlplane

__all__ = ["controlplane", "controlplane_session", "k8s_backend"]

FAKE_ONLY = "fake_only"
_PROPERTY = "k8s_backend"
_FAKE_ONLY_PROPERTY = "k8s_backend_fake_only"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "k8s_backend" not in metafunc.fixturenames:
        return
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        if "k8s_backend" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return  # the test chose its backends itself
    fake_only = metafunc.definition.get_closest_marker(FAKE_ONLY) is not None
    params = ["fake"] if fake_only else list(BACKENDS)
    metafunc.parametrize("k8s_backend", params, indirect=True)


@pytest.fixture(scope="session")
def controlplane_session(controlplane: ControlPlane) -> Iterator[ControlPlaneSession]:
    """Which profiles the session's control plane has been seeded with; its pod players."""
    session = ControlPlaneSession(controlplane)
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def k8s_backend(request: pytest.FixtureRequest, aicr_fake_cluster_factory: Any) -> Iterator[K8sBackend]:
    """The cluster backend of this test instance (:class:`~tests.harness.backends.K8sBackend`)."""
    name = getattr(request, "param", "fake")
    request.node.user_properties.append((_PROPERTY, name))
    marker = request.node.get_closest_marker(FAKE_ONLY)
    if marker is not None:
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        request.node.user_properties.append((_FAKE_ONLY_PROPERTY, str(reason)))
    backend: K8sBackend
    if name == "fake":
        backend = FakeBackend(aicr_fake_cluster_factory)
    elif name == "controlplane":
        backend = ControlPlaneBackend(request.getfixturevalue("controlplane_session"))
    else:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    try:
        yield backend
    finally:
        backend.close()


class BackendCounter:
    """Counts backend scenarios by outcome (works under xdist: user_properties travel with reports)."""

    def __init__(self) -> None:
        self.ran: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.fake_only = 0
        self.fake_only_reasons: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        backend = props.get(_PROPERTY)
        if backend is None:
            return
        ran = report.when == "call" or (report.when == "setup" and report.failed)
        if ran:
            self.ran[str(backend)] += 1
            if _FAKE_ONLY_PROPERTY in props:
                self.fake_only += 1
                self.fake_only_reasons[str(props[_FAKE_ONLY_PROPERTY])] += 1
        elif report.when == "setup" and report.skipped:
            self.skipped[str(backend)] += 1

    def line(self) -> str:
        counts = " ".join(f"{b}={self.ran.get(b, 0)}" for b in BACKENDS)
        text = f"backend scenarios: {counts} (fake-only: {self.fake_only})"
        skipped = ", ".join(f"{b}={n}" for b, n in sorted(self.skipped.items()) if n)
        if skipped:
            text += f"; skipped: {skipped}"
        return text

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not (self.ran or self.skipped):
            return
        terminalreporter.write_sep("-", "k8s backends")
        terminalreporter.write_line(self.line())
        if self.fake_only_reasons and terminalreporter.config.option.verbose > 0:
            for reason, n in sorted(self.fake_only_reasons.items()):
                terminalreporter.write_line(f"  fake-only x{n}: {reason}")


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("aicr-backend-counter"):
        config.pluginmanager.register(BackendCounter(), "aicr-backend-counter")
