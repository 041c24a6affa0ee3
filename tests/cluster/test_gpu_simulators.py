"""Simulated GPUs are not GPUs: ``check-nvidia-smi`` on nodes whose GPUs NVIDIA's NVML mock stands in for
(fault ``nvml-mock``) is ``other`` naming the simulator, on both backends, unless ``--allow-fake-nodes``;
so are ``gpu-inventory`` and ``gpu-health``, which judge what the nodes report rather than a pod of theirs.

The runs here do not add the control plane's usual ``--allow-fake-nodes``: its nodes are KWOK's, and the
simulator, read first, is what the message must name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.deployment.nvidia_smi
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from tests.cluster.check_runner import ALLOW_FAKE_NODES, assert_no_rbac_denials, run_phase
from tests.harness.backends import ControlPlaneBackend, K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
CHECK = "check-nvidia-smi"


def run(pytester: pytest.Pytester, backend: K8sBackend, *extra: str, check: str = CHECK) -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"] = {"deployment": {"checks": [check]}}
    if check != CHECK and isinstance(backend, ControlPlaneBackend):  # its other GPU pool has no exporter
        extra = (*extra, "--aicr-node-selector", "aicr.test/pool=gpu")
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    result = run_phase(
        pytester,
        phase="deployment",
        recipe=doc,
        snapshot=SNAPSHOT,
        kubeconfig=backend.restricted_kubeconfig_path,
        clock=backend.check_clock,
        extra=extra,
        drive=drive if drive is not None else backend.clock_running(step=0.25),
    )
    assert_no_rbac_denials(result.tests)
    assert backend.controller_errors() == []
    return result.tests[check]


def test_nvidia_smi_on_the_nvml_mock_is_other_naming_it(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["nvml-mock"])
    test = run(pytester, k8s_backend)
    assert test["status"] == "other", test.get("message")
    why = re.compile(
        r"no proof of execution for pod \S+ on node (\S+): NVIDIA's NVML mock simulates its GPUs "
        r"\(pod nvml-mock/nvml-mock-\S+ runs image ghcr\.io/nvidia/nvml-mock:v0\.1\.0\), "
        r"so no GPU ran the pod \(--allow-fake-nodes accepts simulated nodes\)"
    )
    assert why.search(test["message"]), test["message"]


def test_allow_fake_nodes_accepts_the_nvml_mock(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["nvml-mock"])
    test = run(pytester, k8s_backend, ALLOW_FAKE_NODES)
    assert test["status"] == "passed", test.get("message")


NODE_SIMULATED = re.compile(
    r"node (\S+): NVIDIA's NVML mock simulates its GPUs \(pod nvml-mock/nvml-mock-\S+ runs image "
    r"ghcr\.io/nvidia/nvml-mock:v0\.1\.0\), so what it reports comes from no GPU "
    r"\(--allow-fake-nodes accepts simulated nodes\)"
)


@pytest.mark.parametrize("check", ["gpu-inventory", "gpu-health"])
def test_node_health_on_the_nvml_mock_is_other_naming_it(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, check: str
) -> None:
    k8s_backend.seed_profile(PROFILE, ["nvml-mock"])
    test = run(pytester, k8s_backend, check=check)
    assert test["status"] == "other", test.get("message")
    lines = test["message"].splitlines()
    assert lines and all(NODE_SIMULATED.fullmatch(line) for line in lines), test["message"]
    assert len({NODE_SIMULATED.fullmatch(line)[1] for line in lines}) == len(lines) >= 2  # type: ignore[index]


def test_allow_fake_nodes_lets_node_health_judge_the_nvml_mock(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["nvml-mock"])
    test = run(pytester, k8s_backend, ALLOW_FAKE_NODES, check="gpu-inventory")
    assert test["status"] == "passed", test.get("message")
