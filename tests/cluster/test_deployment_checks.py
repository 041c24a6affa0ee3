"""The deployment-phase checks end to end: real plugin + real facade, on both backends (``k8s_backend``).

Each scenario runs the bundled checks through pytester with ``--kubeconfig`` set to the backend's
*least-privilege* kubeconfig (on the control plane: the user bound to ``deploy/rbac.yaml`` only), so
an RBAC denial anywhere in a check is a red test. The fake is seeded with a profile and checks read
its virtual clock (auto-advanced while a check blocks in a watch); the control plane is seeded with
the same profile (real controllers run the workloads, see :mod:`tests.harness.backends`) and
checks read a clock whose sleeps (dwell windows, poll intervals) cost no real time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.constraints
import aicr_pytest.core.inputs
import aicr_pytest.deployment.fetch
import aicr_pytest.deployment.nvidia_smi
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from tests.cluster.check_runner import run_on_backend
from tests.harness.backends import ControlPlaneBackend, K8sBackend, gpu_node_names

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"


def run_deployment(
    pytester: pytest.Pytester, backend: K8sBackend, *extra: str, recipe: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    drive = None
    if backend.virtual_time:  # the fake: move its clock while a check blocks in a watch
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    run = run_on_backend(
        pytester,
        backend,
        phase="deployment",
        recipe=RECIPE if recipe is None else recipe,
        snapshot=SNAPSHOT,
        extra=extra,
        drive=drive,
    )
    return run.tests


def test_healthy_profile_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    tests = run_deployment(pytester, k8s_backend)
    assert tests["operator-health"]["status"] == "passed", tests["operator-health"].get("message")
    assert tests["operator-health"]["stdout"][0] == "Found 1 gpu-operator pod(s):"
    assert tests["gpu-operator-version"]["status"] == "passed", tests["gpu-operator-version"]
    assert "Constraint: >= v24.6.0 → true" in tests["gpu-operator-version"]["stdout"]
    assert tests["expected-resources"]["status"] == "passed", tests["expected-resources"].get("message")
    assert tests["check-nvidia-smi"]["status"] == "passed", tests["check-nvidia-smi"].get("message")
    # check-nvidia-smi verifies every GPU node of the cluster: the fake profile's 4 H100 nodes; on the
    # control plane both kwok GPU pools (the profile's H100 nodes and the GB200 pool)
    cp = k8s_backend.cp if isinstance(k8s_backend, ControlPlaneBackend) else None
    gpu_nodes = len(gpu_node_names(cp)) if cp is not None else 4
    assert f"nodesValidated: {gpu_nodes}/{gpu_nodes}" in tests["check-nvidia-smi"]["stdout"]
    assert k8s_backend.controller_errors() == []


def test_gpu_operator_missing_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["gpu-operator-missing"])
    tests = run_deployment(pytester, k8s_backend)
    assert tests["operator-health"]["status"] == "failed"
    assert tests["gpu-operator-version"]["status"] in ("failed", "other")
    assert tests["expected-resources"]["status"] == "failed"
    assert "gpu-operator" in tests["expected-resources"]["message"]


def test_device_plugin_crashloop_fails_naming_daemonset(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["device-plugin-crashloop"])
    tests = run_deployment(pytester, k8s_backend)
    assert tests["expected-resources"]["status"] == "failed"
    assert "nvidia-device-plugin-daemonset" in tests["expected-resources"]["message"]


def test_version_without_constraint_skips(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    recipe = yamlio.load(RECIPE.read_text())
    recipe["validation"]["deployment"]["constraints"] = []
    tests = run_deployment(pytester, k8s_backend, recipe=recipe)
    assert tests["gpu-operator-version"]["status"] == "skipped"
    assert tests["gpu-operator-version"]["message"].startswith(
        "no Deployment.gpu-operator.version constraint in recipe; detected v"
    )


@pytest.mark.fake_only("HTTP fault injection: persistent 500 on pod lists")
def test_api_errors_are_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).faults.server_error(path=r"/pods", times=None)
    tests = run_deployment(pytester, k8s_backend)
    assert tests["operator-health"]["status"] == "other"


# --- the embedded health checks of Kubeflow Trainer and the KAI scheduler ---------------------------


def test_trainer_and_kai_health_checks_pass(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    test = run_deployment(pytester, k8s_backend)["expected-resources"]
    assert test["status"] == "passed", test.get("message")
    assert "  [chainsaw] kai-scheduler: health check passed" in test["stdout"]
    assert "  [chainsaw] kubeflow-trainer: health check passed" in test["stdout"]


NOT_READY = (
    "does not match: (status.readyReplicas > `0`): expected true, got null; "
    "(status.readyReplicas == spec.replicas): expected true, got false"
)


@pytest.mark.parametrize(
    ("fault", "component", "step", "deployment"),
    [
        (
            "trainer-controller-down",
            "kubeflow-trainer",
            "controller-ready",
            "kubeflow/kubeflow-trainer-controller-manager",
        ),
        ("kai-scheduler-down", "kai-scheduler", "services-ready", "kai-scheduler/kai-scheduler-default"),
    ],
)
def test_a_down_controller_fails_its_health_check(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, fault: str, component: str, step: str, deployment: str
) -> None:
    k8s_backend.seed_profile(PROFILE, [fault])
    test = run_deployment(pytester, k8s_backend)["expected-resources"]
    assert (test["status"], test["message"]) == (
        "failed",
        "[NOT_FOUND] expected resource check failed: 1 issue(s):\n"
        f"  [chainsaw] {component}: health check failed\n"
        f'    error: step "{step}": [INTERNAL] Deployment {deployment} {NOT_READY}',
    )
