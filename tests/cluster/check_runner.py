"""Run the bundled checks in-process (pytester) against a cluster, and read back their CTRF report.

Every end-to-end check scenario does the same thing: hand the cluster's clock to the checks (a
session ``aicr_clock`` fixture reading :data:`tests.cluster.shared_clock.CURRENT`), write the recipe,
run one phase with ``--kubeconfig`` and ``--aicr-ctrf-report`` while something moves time (the fake's
virtual clock, or nothing at all on the control plane), and parse the report. :func:`run_phase` is
that; :func:`run_on_backend` adds the backend-parametrized defaults (the backend's *least-privilege*
kubeconfig and check clock) and fails the test on any RBAC denial.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster import shared_clock
from tests.harness.backends import ControlPlaneBackend, K8sBackend

#: what the control plane's runs add: its nodes are KWOK's fakes
ALLOW_FAKE_NODES = "--aicr-allow-fake-nodes"

CONFTEST = """
import pytest
from tests.cluster import shared_clock

@pytest.fixture(scope="session")
def aicr_clock():
    return shared_clock.CURRENT[0]
"""


@dataclass
class PhaseRun:
    """One in-process run: the pytester result and the CTRF report (``{}`` when none was written)."""

    result: pytest.RunResult
    report: dict[str, Any]
    ctrf_text: str
    tests: dict[str, dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        self.tests = {t["name"]: t for t in (self.report.get("results") or {}).get("tests") or []}

    @property
    def run_id(self) -> str:
        return str(self.report["extra"]["aicr.runId"])


def assert_no_rbac_denials(tests: dict[str, dict[str, Any]]) -> None:
    """No check may end because the least-privilege user was refused something."""
    denied = {
        name: t.get("message", "")
        for name, t in tests.items()
        if "RBAC denied" in (t.get("message") or "") or "403 Forbidden" in (t.get("message") or "")
    }
    assert not denied, f"RBAC denials with deploy/rbac.yaml: {denied}"


def run_phase(
    pytester: pytest.Pytester,
    *,
    phase: str,
    recipe: Path | dict[str, Any],
    snapshot: Path,
    kubeconfig: Path | None,
    clock: Any,
    extra: Sequence[str] = (),
    drive: contextlib.AbstractContextManager[Any] | None = None,
    conftest: str = CONFTEST,
    shared: Sequence[Any] = (),
) -> PhaseRun:
    """Run ``phase`` of ``recipe`` (a path, or a document written to ``recipe.yaml``) in-process.

    ``clock`` is what the checks' ``aicr_clock`` returns (``shared`` follows it in
    :data:`shared_clock.CURRENT` for a custom ``conftest``); ``drive`` is entered around the run
    (e.g. the fake's auto-advancing clock).  ``kubeconfig`` ``None``: none is given (in-cluster mode).
    """
    shared_clock.CURRENT[:] = [clock, *shared]
    pytester.makeconftest(conftest)
    if not isinstance(recipe, Path):
        doc = recipe
        recipe = pytester.path / "recipe.yaml"
        recipe.write_text(yamlio.dump(doc))
    out = pytester.path / "ctrf.json"
    with drive if drive is not None else contextlib.nullcontext():
        result = pytester.runpytest(
            "-p",
            "no:cacheprovider",
            "--recipe",
            str(recipe),
            "--snapshot",
            str(snapshot),
            *(("--aicr-kubeconfig", str(kubeconfig)) if kubeconfig is not None else ()),
            "--aicr-phase",
            phase,
            "--aicr-ctrf-report",
            str(out),
            *extra,
            no_reraise_ctrlc=True,
        )
    text = out.read_text() if out.exists() else ""
    return PhaseRun(result, json.loads(text) if text else {}, text)


def run_on_fake(
    pytester: pytest.Pytester,
    fc: FakeCluster,
    *,
    phase: str,
    recipe: Path | dict[str, Any],
    snapshot: Path,
    extra: Sequence[str] = (),
    drive: contextlib.AbstractContextManager[Any] | None = None,
    **kw: Any,
) -> PhaseRun:
    """:func:`run_phase` on a FakeCluster: its kubeconfig, its clock, auto-advancing unless ``drive``
    says otherwise; no simulator timer may have failed."""
    run = run_phase(
        pytester,
        phase=phase,
        recipe=recipe,
        snapshot=snapshot,
        kubeconfig=fc.kubeconfig_path,
        clock=shared_clock.ClusterClock(fc),
        extra=extra,
        drive=drive if drive is not None else fc.auto_advancing(),
        **kw,
    )
    if drive is None:  # auto-advancing: no simulator timer may have failed
        assert fc.advancer is not None and fc.advancer.errors == []
    return run


def backend_args(backend: K8sBackend, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """``extra`` plus what the backend's runs need: ``--allow-fake-nodes`` on the control plane
    (its nodes are KWOK's fakes, ``kwok.x-k8s.io/node: fake``)."""
    if isinstance(backend, ControlPlaneBackend) and ALLOW_FAKE_NODES not in extra:
        return (*extra, ALLOW_FAKE_NODES)
    return tuple(extra)


def run_on_backend(
    pytester: pytest.Pytester,
    backend: K8sBackend,
    *,
    phase: str,
    recipe: Path | dict[str, Any],
    snapshot: Path,
    extra: Sequence[str] = (),
    drive: contextlib.AbstractContextManager[Any] | None = None,
    step: float = 0.25,
    in_cluster: bool = False,
) -> PhaseRun:
    """:func:`run_phase` as the backend's least-privilege user, on its check clock; no RBAC denials.
    ``in_cluster``: no kubeconfig at all (the caller set up the service account's environment).

    Time moves with ``backend.clock_running(step)`` unless ``drive`` says otherwise; the backend's
    own arguments are added (:func:`backend_args`)."""
    extra = backend_args(backend, extra)
    run = run_phase(
        pytester,
        phase=phase,
        recipe=recipe,
        snapshot=snapshot,
        kubeconfig=None if in_cluster else backend.restricted_kubeconfig_path,
        clock=backend.check_clock,
        extra=extra,
        drive=drive if drive is not None else backend.clock_running(step=step),
    )
    assert run.report, f"no CTRF report:\n{run.result.stdout.str()[-3000:]}"
    assert_no_rbac_denials(run.tests)
    return run


#: what every run that needs the cluster asks before its first check: the reachability probe and the
#: scan for objects earlier runs left (their ``managed-by`` label)
_PREFLIGHT_SELECTOR = "labelSelector=app.kubernetes.io%2Fmanaged-by%3Daicr-pytest"


def requests_beyond_preflight(fc: Any) -> list[tuple[str, str]]:
    """The (method, path) of every request a run made other than its pre-flight ones: what the checks
    themselves asked of the fake cluster."""
    return [
        (r.method, r.path)
        for r in fc.server.requests
        if not (
            (r.method == "GET" and r.path == "/version")
            or (r.method == "GET" and _PREFLIGHT_SELECTOR in (getattr(r, "query", "") or ""))
        )
    ]
