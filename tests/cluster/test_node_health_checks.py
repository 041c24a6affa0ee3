"""The node-health checks end to end: real plugin + real facade + the fake cluster's players.

``gpu-inventory``, ``gpu-diagnostics`` and ``gpu-health`` run through pytester against a FakeCluster
profile (its clock auto-advancing while a check blocks), with the example recipe naming the check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster.check_runner import PhaseRun, run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
GPU_NODES = ["h100-0", "h100-1", "h100-2", "h100-3"]


def recipe_with(*checks: str) -> dict[str, Any]:
    doc = yamlio.load(RECIPE.read_text())
    doc["validation"] = {"deployment": {"checks": list(checks)}}
    return doc


def run_checks(
    pytester: pytest.Pytester, fc: FakeCluster, *checks: str, extra: tuple[str, ...] = ()
) -> PhaseRun:
    return run_on_fake(
        pytester, fc, phase="deployment", recipe=recipe_with(*checks), snapshot=SNAPSHOT, extra=extra
    )


# ----------------------------------------------------------------------------- gpu-inventory --
def test_inventory_passes_on_a_healthy_cluster(pytester: pytest.Pytester, fake_cluster_factory: Any) -> None:
    fc = fake_cluster_factory(PROFILE)
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"][-1].startswith("GPU inventory consistent on 4 nodes: 8 x ")
    nodes = test["extra"]["aicr.gpuInventory"]["nodes"]
    assert [n["node"] for n in nodes] == GPU_NODES
    assert {(n["allocatable"], n["advertised"], n["driver"]) for n in nodes} == {(8, 8, 8)}
    assert any(line.startswith("h100-3: 8 allocatable") for line in test["stdout"])


def test_gpu_missing_fails_naming_the_last_node(pytester: pytest.Pytester, fake_cluster_factory: Any) -> None:
    fc = fake_cluster_factory(PROFILE, ["gpu-missing"])
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "failed"
    assert test["message"].splitlines()[0] == "node h100-3: 7 of 8 GPUs allocatable"
    assert "h100-0" not in test["message"]


def test_inventory_is_other_when_nodes_cannot_be_listed(
    pytester: pytest.Pytester, fake_cluster_factory: Any
) -> None:
    fc = fake_cluster_factory(PROFILE)
    fc.faults.server_error(path=r"/api/v1/nodes$", times=None)
    test = run_checks(pytester, fc, "gpu-inventory").tests["gpu-inventory"]
    assert test["status"] == "other"
    assert test["message"].startswith("could not list Nodes: ")


def test_inventory_skips_when_the_run_skips_it(pytester: pytest.Pytester, fake_cluster_factory: Any) -> None:
    fc = fake_cluster_factory(PROFILE, ["gpu-missing"])
    run = run_checks(
        pytester, fc, "operator-health", "gpu-inventory", extra=("--skip-check", "gpu-inventory")
    )
    assert run.tests["gpu-inventory"]["status"] == "skipped"
    assert run.tests["operator-health"]["status"] == "passed"
