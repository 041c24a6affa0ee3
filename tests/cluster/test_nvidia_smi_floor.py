"""``check-nvidia-smi`` with a host-driver floor (``Deployment.gpu-driver.version``, AICR #1995), on both
backends: pass at the floor, fail naming node and version below it (fault ``driver-below-floor``),
fail closed when the floor cannot be measured (busy nodes), ``other`` when a verify pod never runs."""

from __future__ import annotations

import contextlib
import re
import time
import urllib.error
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.deployment.nvidia_smi
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.deployment import VERIFY_POD_PREFIX
from aicr_pytest.testing.players.nvidia_smi import BELOW_FLOOR_DRIVER, DEFAULT_DRIVER
from aicr_pytest.testing.simulator import PodScript
from tests.cluster.check_runner import run_on_backend
from tests.harness.backends import K8sBackend, gpu_node_names

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
CHECK = "check-nvidia-smi"
FLOOR = ">= 580.95.05"


def floor_recipe(floor: str = FLOOR) -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"] = {
        "deployment": {
            "checks": [CHECK],
            "constraints": [{"name": "Deployment.gpu-driver.version", "value": floor}],
        }
    }
    return doc


def run(pytester: pytest.Pytester, backend: K8sBackend, doc: dict[str, Any]) -> dict[str, Any]:
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    result = run_on_backend(
        pytester, backend, phase="deployment", recipe=doc, snapshot=SNAPSHOT, extra=(), drive=drive
    )
    assert backend.controller_errors() == []
    return result.tests[CHECK]


def gpu_nodes(backend: K8sBackend) -> list[str]:
    cp = getattr(backend, "cp", None)
    if cp is not None:
        return sorted(gpu_node_names(cp))
    return ["h100-0", "h100-1", "h100-2", "h100-3"]


def test_a_driver_at_the_floor_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    test = run(pytester, k8s_backend, floor_recipe())
    assert test["status"] == "passed", test.get("message")
    for node in gpu_nodes(k8s_backend):
        assert f"  {node}: host driver {DEFAULT_DRIVER}, constraint {FLOOR} → true" in test["stdout"]


def test_a_driver_below_the_floor_fails_naming_node_and_version(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["driver-below-floor"])
    test = run(pytester, k8s_backend, floor_recipe())
    assert test["status"] == "failed"
    found = re.search(
        rf"\[INTERNAL\] host driver version {re.escape(BELOW_FLOOR_DRIVER)} on node (\S+) does not satisfy "
        rf'Deployment\.gpu-driver\.version "{re.escape(FLOOR)}"',
        test["message"],
    )
    assert found is not None, test["message"]
    node = found.group(1)
    assert test["message"].startswith("[INTERNAL] GPU verification failed on 1/")
    assert f"  {node}: host driver {BELOW_FLOOR_DRIVER}, constraint {FLOOR} → false" in test["stdout"]


def test_the_same_fault_without_a_floor_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["driver-below-floor"])
    doc = floor_recipe()
    doc["validation"]["deployment"]["constraints"] = []
    test = run(pytester, k8s_backend, doc)
    assert test["status"] == "passed", test.get("message")  # no floor declared: none is invented
    assert not any("host driver" in line for line in test["stdout"])


def test_a_floor_that_cannot_be_measured_fails_instead_of_skipping(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    node = gpu_nodes(k8s_backend)[0]
    ns = k8s_backend.namespace("default")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer-floor-0", "namespace": ns},
        "spec": {
            "nodeName": node,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
        },
        "status": {"phase": "Running"},
    }
    k8s_backend.seed([pod])
    try:
        test = run(pytester, k8s_backend, floor_recipe())
    finally:
        remove_pod(k8s_backend, ns, "trainer-floor-0")
    assert test["status"] == "failed"
    assert test["message"] == (
        f'[NOT_FOUND] Deployment.gpu-driver.version "{FLOOR}" is set but the host driver version could not '
        f"be measured (GPU nodes busy with existing workloads: [{node}])"
    )


def remove_pod(backend: K8sBackend, namespace: str, name: str) -> None:
    """Delete the busy pod now and wait until it is gone (the namespace's own deletion is lazy on a
    real control plane, and a lingering GPU pod would make later scenarios' nodes busy)."""
    cp = getattr(backend, "cp", None)
    if cp is None:
        from _facade_helpers import fake_of

        fake_of(backend).delete("v1", "Pod", name, namespace)
        return
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    with contextlib.suppress(urllib.error.HTTPError):
        cp.request("DELETE", path, {"gracePeriodSeconds": 0})
    for _ in range(300):
        if backend.find("v1", "Pod", name, namespace) is None:
            return
        time.sleep(0.1)
    raise AssertionError(f"pod {namespace}/{name} was not deleted")


@pytest.mark.fake_only("scripts a verify pod that never starts (a PodScript)")
def test_a_verify_pod_that_never_runs_is_other_not_a_pass(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).sim.script(
        PodScript(name_prefix=f"{VERIFY_POD_PREFIX}h100-2-", waiting_reason="ImagePullBackOff")
    )
    test = run(pytester, k8s_backend, floor_recipe())
    assert test["status"] == "other"
    assert "h100-2" in test["message"]
