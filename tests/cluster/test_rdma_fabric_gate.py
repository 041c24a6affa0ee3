"""``expected-resources``' RDMA fabric readiness gate (AICR main), on both backends: a recipe whose
``network-operator`` declares a NicClusterPolicy makes the check wait for the fabric resource that
policy advertises on every Mellanox RDMA-capable GPU node; fault ``rdma-not-ready`` fails it naming the
node. Recipes without the policy are not gated (the healthy profiles' own scenarios)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.deployment.fetch
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.testing.profiles.faults import MELLANOX_LABEL, RDMA_FABRIC_RESOURCE
from tests.cluster.check_runner import run_on_backend
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
CHECK = "expected-resources"
POLICY = "components/network-operator/manifests/nic-cluster-policy-test.yaml"
# a NicClusterPolicy in the shape AICR's AKS overlay ships (a Helm-templated label included)
NIC_CLUSTER_POLICY = """\
---
apiVersion: mellanox.com/v1alpha1
kind: NicClusterPolicy
metadata:
  name: nic-cluster-policy
  labels:
    app.kubernetes.io/managed-by: {{ .Release.Service }}
spec:
  rdmaSharedDevicePlugin:
    image: k8s-rdma-shared-dev-plugin
    config: |
      {"configList": [{"resourceName": "hca_shared_devices_a", "rdmaHcaMax": 1000}]}
"""


def data_dir(root: Path, policy: str = NIC_CLUSTER_POLICY) -> Path:
    (root / "components/network-operator/manifests").mkdir(parents=True, exist_ok=True)
    (root / "registry.yaml").write_text("components: []\n")
    (root / POLICY).write_text(policy)
    return root


def recipe() -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["componentRefs"].append(
        {
            "name": "network-operator",
            "type": "Helm",
            "source": "https://helm.ngc.nvidia.com/nvidia",
            "version": "26.1.1",
            "manifestFiles": [POLICY],
        }
    )
    doc["validation"] = {"deployment": {"checks": [CHECK]}}
    return doc


def run(pytester: pytest.Pytester, backend: K8sBackend, data: Path) -> dict[str, Any]:
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    result = run_on_backend(
        pytester,
        backend,
        phase="deployment",
        recipe=recipe(),
        snapshot=SNAPSHOT,
        extra=("--aicr-data", str(data)),
        drive=drive,
    )
    assert backend.controller_errors() == []
    return result.tests[CHECK]


def test_a_fabric_still_rolling_out_fails_naming_the_node(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["rdma-not-ready"])
    rdma = sorted(
        n["metadata"]["name"]
        for n in k8s_backend.list("v1", "Node", None, label_selector=f"{MELLANOX_LABEL}=true")
    )
    assert len(rdma) >= 2  # the profile's GPU nodes: 4 on the fake, kwok's H100 pool on the control plane
    test = run(pytester, k8s_backend, data_dir(pytester.path / "data"))
    assert test["status"] == "failed"
    assert re.search(
        r"\[TIMEOUT\] RDMA shared-device fabric \(rdma/hca_shared_devices_a\) across RDMA GPU nodes "
        r"not ready within \S+: rdma/hca_shared_devices_a not yet allocatable on "
        rf"1 of {len(rdma)} RDMA GPU node\(s\): "
        rf"\[{re.escape(rdma[-1])}\] \(network operator MOFED / RDMA device plugin still rolling out\)",
        test["message"],
    ), test["message"]


@pytest.mark.fake_only("rewrites the GPU nodes' labels and allocatable (kwok's nodes are the harness's)")
def test_a_ready_fabric_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile(PROFILE, ["rdma-not-ready"])
    fc = fake_of(k8s_backend)
    last = fc.find("v1", "Node", "h100-3")
    assert last is not None
    for key in ("capacity", "allocatable"):
        last["status"].setdefault(key, {})[RDMA_FABRIC_RESOURCE] = "1000"
    fc.add(last)
    test = run(pytester, k8s_backend, data_dir(pytester.path / "data"))
    assert test["status"] == "passed", test.get("message")
    ready = (
        "  RDMA fabric (rdma/hca_shared_devices_a): allocatable (uniform) on all 4 schedulable "
        "RDMA GPU node(s) (stable ≥1m0s)"
    )
    stdout = test["stdout"]
    at = stdout.index(ready)
    assert stdout[at - 2 : at] == [
        "Found 4 Mellanox RDMA-capable GPU node(s), 4 schedulable, 0 cordoned:",
        "nodesValidated: 4/4",
    ]
    assert stdout[-1] == "All deployment resources and required readiness signals are healthy"


@pytest.mark.fake_only("a recipe error: no cluster difference")
@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            "kind: NicClusterPolicy\nspec: {}\n",
            "[INTERNAL] component network-operator declares a NicClusterPolicy manifest but no device-plugin "
            "resource could be derived from it; the RDMA fabric readiness gate cannot run",
        ),
        (
            "kind: NicClusterPolicy\nspec:\n"
            '  rdmaSharedDevicePlugin:\n    config: \'{"configList": [{"resourceName": "a"}]}\'\n'
            '  sriovDevicePlugin:\n    config: \'{"resourceList": [{"resourceName": "b"}]}\'\n',
            "[INTERNAL] component network-operator declares multiple distinct RDMA fabric resources "
            "[intel.com/b rdma/a]; the readiness gate polls a single uniform resource and cannot arbitrate",
        ),
        (
            "kind: NicClusterPolicy\nspec:\n"
            "  rdmaSharedDevicePlugin:\n    config: '{{ .Values.rdmaConfig }}'\n",
            f"[INTERNAL] failed to parse NicClusterPolicy manifest {POLICY} for component network-operator: "
            "rdmaSharedDevicePlugin config is templated (it needs the component's Helm values)",
        ),
    ],
)
def test_a_fabric_that_cannot_be_derived_fails_closed(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, policy: str, message: str
) -> None:
    k8s_backend.seed_profile(PROFILE)
    test = run(pytester, k8s_backend, data_dir(pytester.path / "data", policy))
    assert test["status"] == "failed"
    assert message in test["message"]
