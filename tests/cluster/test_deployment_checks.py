"""The deployment-phase checks end to end: real plugin + real facade + the fake cluster.

Each scenario runs the bundled checks through pytester against a FakeCluster profile; the
check's clock is the fake cluster's clock, so dwell windows and retries cost no real time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.constraints
import aicr_pytest.deployment
import aicr_pytest.plugin
import aicr_pytest.session  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest import yamlio
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster import shared_clock

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"

CONFTEST = """
import pytest
from tests.cluster import shared_clock

@pytest.fixture(scope="session")
def aicr_clock():
    return shared_clock.CURRENT[0]
"""


def run_deployment(
    pytester: pytest.Pytester, fc: FakeCluster, *extra: str, recipe: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    shared_clock.CURRENT[:] = [shared_clock.ClusterClock(fc)]
    pytester.makeconftest(CONFTEST)
    recipe_path = RECIPE
    if recipe is not None:
        recipe_path = pytester.path / "recipe.yaml"
        recipe_path.write_text(yamlio.dump(recipe))
    out = pytester.path / "ctrf.json"
    pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--recipe",
        str(recipe_path),
        "--snapshot",
        str(SNAPSHOT),
        "--kubeconfig",
        str(fc.kubeconfig_path),
        "--phase",
        "deployment",
        "--ctrf-report",
        str(out),
        *extra,
    )
    report = json.loads(out.read_text())
    return {t["name"]: t for t in report["results"]["tests"]}


def test_healthy_profile_passes(pytester: pytest.Pytester, fake_cluster_factory: Any) -> None:
    fc = fake_cluster_factory("h100-eks-training")
    tests = run_deployment(pytester, fc)
    assert tests["operator-health"]["status"] == "passed"
    assert tests["operator-health"]["stdout"][0] == "Found 1 gpu-operator pod(s):"
    assert tests["gpu-operator-version"]["status"] == "passed", tests["gpu-operator-version"]
    assert "Constraint: >= v25.3.0 → true" in tests["gpu-operator-version"]["stdout"]
    assert tests["expected-resources"]["status"] == "passed", tests["expected-resources"].get("message")


def test_gpu_operator_missing_fails(pytester: pytest.Pytester, fake_cluster_factory: Any) -> None:
    fc = fake_cluster_factory("h100-eks-training", faults=["gpu-operator-missing"])
    tests = run_deployment(pytester, fc)
    assert tests["operator-health"]["status"] == "failed"
    assert tests["gpu-operator-version"]["status"] in ("failed", "other")
    assert tests["expected-resources"]["status"] == "failed"
    assert "gpu-operator" in tests["expected-resources"]["message"]


def test_device_plugin_crashloop_fails_naming_daemonset(
    pytester: pytest.Pytester, fake_cluster_factory: Any
) -> None:
    fc = fake_cluster_factory("h100-eks-training", faults=["device-plugin-crashloop"])
    tests = run_deployment(pytester, fc)
    assert tests["expected-resources"]["status"] == "failed"
    assert "nvidia-device-plugin-daemonset" in tests["expected-resources"]["message"]


def test_version_without_constraint_skips(pytester: pytest.Pytester, fake_cluster_factory: Any) -> None:
    fc = fake_cluster_factory("h100-eks-training")
    recipe = yamlio.load(RECIPE.read_text())
    recipe["validation"]["deployment"]["constraints"] = []
    tests = run_deployment(pytester, fc, recipe=recipe)
    assert tests["gpu-operator-version"]["status"] == "skipped"
    assert tests["gpu-operator-version"]["message"].startswith(
        "no Deployment.gpu-operator.version constraint in recipe; detected v"
    )


def test_api_errors_are_other(pytester: pytest.Pytester, fake_cluster_factory: Any) -> None:
    fc = fake_cluster_factory("h100-eks-training")
    fc.faults.server_error(path=r"/pods", times=None)
    tests = run_deployment(pytester, fc)
    assert tests["operator-health"]["status"] == "other"
