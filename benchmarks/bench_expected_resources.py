"""Wall time of ``expected-resources`` on a healthy fake cluster, fake clock vs. real clock.

Runs :func:`aicr_pytest.deployment.check_expected_resources` through the real facade against a
FakeCluster with the ``h100-eks-training`` profile and the embedded example recipe
``recipes/examples/h100-eks-training.yaml`` (12 enabled components):

* ``fake``: the check's clock is the fake cluster's clock (sleeping advances the simulation),
  so dwell windows and retries cost no real time -- target: under 2 s of wall time;
* ``real``: wall-clock time and real sleeps (the fake cluster on a ``RealClock``) -- the lower
  bound is one readiness-signal dwell window (60 s), not 60 s per signal as in AICR, because the
  signals' dwell windows and the component health checks run concurrently.

The example recipe has one readiness signal (the DRA kubelet-plugin DaemonSet), where one dwell
and "60 s x signals" coincide; the ``+nodewright`` variants add a ``nodewright-customizations``
component (a Skyhook CR ``tuning``, ``status: complete``) so two signals dwell at the same time.

    .venv/bin/python benchmarks/bench_expected_resources.py [fake|real|both]   (default both)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from aicr_pytest import deployment
from aicr_pytest.core import yamlio
from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.deployment.fetch import ClusterFetch
from aicr_pytest.kube import connect
from aicr_pytest.testing.clock import RealClock
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.profiles import crd

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
PROFILE = "h100-eks-training"
FAKE_TARGET_S = 2.0
SKYHOOK_MANIFEST = "components/nodewright-customizations/manifests/tuning.yaml"
SKYHOOK_YAML = """apiVersion: skyhook.nvidia.com/v1alpha1
kind: Skyhook
metadata:
  name: tuning
spec:
  nodeSelectors:
    matchLabels:
      nvidia.com/gpu.present: "true"
"""


def load_recipe(nodewright: bool) -> Any:
    doc = yamlio.load(RECIPE.read_text())
    if nodewright:
        doc["componentRefs"].append(
            {
                "name": "nodewright-customizations",
                "namespace": "skyhook",
                "type": "Helm",
                "manifestFiles": [SKYHOOK_MANIFEST],
            }
        )
    recipe, _ = parse_recipe(doc, str(RECIPE))
    return recipe


def add_skyhook(fc: FakeCluster) -> None:
    """The Skyhook operator's CRD, its namespace and a completed ``tuning`` CR."""
    fc.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "skyhook"}})
    fc.add(crd("skyhook.nvidia.com", "skyhooks", "Skyhook", ["v1alpha1"], namespaced=False))
    cr = yamlio.load(SKYHOOK_YAML)
    cr["status"] = {"status": "complete"}
    fc.add(cr)


class _AdvancingClock:
    """The fake cluster's virtual clock; sleeping advances it (and the simulator with it)."""

    def __init__(self, fc: FakeCluster) -> None:
        self._fc = fc

    def time(self) -> float:
        return self._fc.clock.time()

    def sleep(self, seconds: float) -> None:
        self._fc.advance(seconds)


def run_once(mode: str, *, nodewright: bool = False) -> tuple[float, list[str]]:
    """One ``expected-resources`` run; returns (wall seconds, the check's stdout lines)."""
    recipe = load_recipe(nodewright)
    data = DataTree.default()

    def read_data_file(rel: str) -> str:
        if nodewright and rel == SKYHOOK_MANIFEST:
            return SKYHOOK_YAML
        return data.read_bytes(rel).decode("utf-8")

    lines: list[str] = []
    clock_kwargs: dict[str, Any] = {"clock": RealClock()} if mode == "real" else {}
    with FakeCluster(PROFILE, **clock_kwargs) as fc:
        if nodewright:
            add_skyhook(fc)
        cluster = connect(str(fc.kubeconfig_path))
        try:
            clock: Clock = SYSTEM_CLOCK if mode == "real" else _AdvancingClock(fc)
            start = time.perf_counter()
            deployment.check_expected_resources(
                recipe.component_refs,
                ClusterFetch(cluster),
                read_data_file=read_data_file,
                registry_entry=data.registry_entry,
                emit=lines.append,
                clock=clock,
                deadline=clock.time() + 480.0,  # the catalog's 8m budget
            )
            elapsed = time.perf_counter() - start
        finally:
            cluster.close()
    return elapsed, lines


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "both"
    modes = ["fake", "real"] if mode == "both" else [mode]
    enabled = len(load_recipe(False).enabled_components())
    print(f"expected-resources, profile {PROFILE}, recipe {RECIPE.name} ({enabled} enabled components)")
    status = 0
    for m in modes:
        for nodewright in (False, True):
            elapsed, lines = run_once(m, nodewright=nodewright)
            dwell_lines = [ln.strip() for ln in lines if "stable ≥" in ln]
            label = f"{m} clock" + (" +nodewright" if nodewright else "")
            print(
                f"  {label:22s} {elapsed:7.3f} s wall, {len(dwell_lines)} readiness signal(s): {dwell_lines}"
            )
            print(f"  {'':22s} last line: {lines[-1]!r}")
            if m == "fake" and elapsed >= FAKE_TARGET_S:
                print(f"  FAIL: fake-clock run took {elapsed:.3f} s (target < {FAKE_TARGET_S:g} s)")
                status = 1
    if "real" in modes:
        print(
            f"  real-clock lower bound: one {deployment.SIGNAL_DWELL:g} s dwell window however many signals "
            f"(AICR: {deployment.SIGNAL_DWELL:g} s x signals, sequentially)"
        )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
