"""The node-health scenarios on both backends (``k8s_backend``): healthy, ``gpu-missing``,
``gpu-driver-missing``, ``gpu-diag-fail`` and ``gpu-xid``, each fault on the last GPU node of the
profile in name order.

On the control plane the checks target the profile's GPU pool (``--node-selector
aicr.test/pool=gpu``: its other GPU pool has no DCGM exporter), its nodes are KWOK's
(``--allow-fake-nodes``, :func:`~tests.cluster.check_runner.backend_args`), the diag pods are played by
:mod:`tests.harness.controlplane_health` and the exporter pods are reached through the real
apiserver's pod proxy.  The verdicts and messages are the fake's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.core.records import HEALTH_TABLE_KEY
from tests.cluster.check_runner import PhaseRun, run_on_backend
from tests.harness.backends import ControlPlaneBackend, K8sBackend, gpu_node_names, profile_gpu_product

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
HEALTH = ("gpu-inventory", "gpu-diagnostics", "gpu-health")


def gpu_nodes(backend: K8sBackend) -> list[str]:
    """The nodes the checks target, in name order."""
    if isinstance(backend, ControlPlaneBackend):
        return gpu_node_names(backend.cp, profile_gpu_product(PROFILE))
    return ["h100-0", "h100-1", "h100-2", "h100-3"]


def run_health(
    pytester: pytest.Pytester,
    backend: K8sBackend,
    *checks: str,
    faults: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
    in_cluster: bool = False,
) -> PhaseRun:
    backend.seed_profile(PROFILE, faults)
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"] = {"deployment": {"checks": list(checks)}}
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    if isinstance(backend, ControlPlaneBackend):
        extra = (*extra, "--aicr-node-selector", "aicr.test/pool=gpu")
    run = run_on_backend(
        pytester,
        backend,
        phase="deployment",
        recipe=doc,
        snapshot=SNAPSHOT,
        extra=extra,
        drive=drive,
        in_cluster=in_cluster,
    )
    assert backend.controller_errors() == []
    return run


def test_a_healthy_cluster_passes_all_three(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    nodes = gpu_nodes(k8s_backend)
    run = run_health(pytester, k8s_backend, *HEALTH)
    statuses = {n: (run.tests[n]["status"], run.tests[n].get("message")) for n in HEALTH}
    assert statuses == {n: ("passed", None) for n in HEALTH}
    count = len(nodes)
    assert run.tests["gpu-inventory"]["stdout"][-1].startswith(
        f"GPU inventory consistent on {count} nodes: 8 x "
    )
    for node, line in zip(nodes, run.tests["gpu-inventory"]["stdout"], strict=False):
        assert line.startswith(f"{node}: 8 allocatable (allocatable nvidia.com/gpu), 8 advertised, ")
        assert ", driver 8 (DCGM exporter gpu-operator/nvidia-dcgm-exporter-" in line
    assert run.tests["gpu-diagnostics"]["stdout"][-1] == (
        f"DCGM diagnostics level 1 passed on {count} nodes: {8 * count} GPUs, every test that ran passed "
        f"({count} tests ran)"
    )
    assert run.tests["gpu-health"]["stdout"][-1] == (
        f"GPU health clean on {count} nodes: {8 * count} GPUs, "
        "no XID, ECC, row-remap or NVLink errors over 1m0s"
    )
    for name in ("gpu-diagnostics", "gpu-health"):
        rows = run.tests[name]["extra"][HEALTH_TABLE_KEY]
        assert {r["node"] for r in rows} == set(nodes) and {r["result"] for r in rows} == {"pass"}


def test_gpu_missing_fails_inventory_naming_the_last_node(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    last = gpu_nodes(k8s_backend)[-1]
    test = run_health(pytester, k8s_backend, "gpu-inventory", faults=("gpu-missing",)).tests["gpu-inventory"]
    assert test["status"] == "failed"
    assert test["message"].splitlines()[0] == f"node {last}: 7 of 8 GPUs allocatable"


def test_gpu_driver_missing_fails_inventory_naming_the_node_and_counts(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    last = gpu_nodes(k8s_backend)[-1]
    run = run_health(pytester, k8s_backend, "gpu-inventory", faults=("gpu-driver-missing",))
    test = run.tests["gpu-inventory"]
    assert test["status"] == "failed"
    assert test["message"] == (
        f"node {last}: the driver reports 7 GPUs but 8 are allocatable and the node advertises 8"
    )


def test_gpu_diag_fail_names_the_node_the_gpu_and_the_test(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    last = gpu_nodes(k8s_backend)[-1]
    run = run_health(
        pytester,
        k8s_backend,
        "gpu-diagnostics",
        faults=("gpu-diag-fail",),
        extra=("--aicr-dcgm-diag-level", "2"),
    )
    test = run.tests["gpu-diagnostics"]
    assert test["status"] == "failed"
    (line,) = test["message"].splitlines()
    assert line.startswith(f"node {last} GPU 7 (serial ")
    assert line.endswith(
        "memory failed: DCGM error 999: GPU 7: memory test found 3 uncorrectable errors (simulated fault)"
    )
    (bad,) = [r for r in test["extra"][HEALTH_TABLE_KEY] if r["result"] != "pass"]
    assert (bad["node"], bad["gpu"], bad["test"], bad["result"]) == (last, "7", "memory", "fail")


def test_gpu_xid_fails_health_naming_the_node_and_gpu(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    last = gpu_nodes(k8s_backend)[-1]
    test = run_health(pytester, k8s_backend, "gpu-health", faults=("gpu-xid",)).tests["gpu-health"]
    assert test["status"] == "failed"
    (line,) = test["message"].splitlines()
    assert line.startswith(f"node {last} GPU 7 (")
    assert "XID 79 during the 1m0s window (DCGM_FI_DEV_XID_ERRORS)" in line


def test_gpu_cuda_smoke_passes_on_a_healthy_cluster(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    nodes = gpu_nodes(k8s_backend)
    healthy = run_health(pytester, k8s_backend, "gpu-cuda-smoke").tests["gpu-cuda-smoke"]
    assert (healthy["status"], healthy.get("message")) == ("passed", None)
    assert healthy["stdout"][-1] == (
        f"CUDA smoke passed on {len(nodes)} nodes: {8 * len(nodes)} GPUs, a CUDA kernel ran on each; "
        "/dev/nvidia-uvm and /dev/nvidia-uvm-tools present"
    )


def test_uvm_missing_fails_gpu_cuda_smoke_naming_the_node_and_each_gpu(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    from aicr_pytest.testing.players.cuda_smoke import KERNEL_ERROR

    last = gpu_nodes(k8s_backend)[-1]
    test = run_health(pytester, k8s_backend, "gpu-cuda-smoke", faults=("uvm-missing",)).tests[
        "gpu-cuda-smoke"
    ]
    assert test["status"] == "failed"
    pod = test["extra"]["aicr.gpuCudaSmoke"]["pods"][last]
    assert test["message"].splitlines() == [
        f"node {last}: /dev/nvidia-uvm is missing in the CUDA pod {pod} (CUDA cannot run)",
        *(f"node {last} GPU {i}: the CUDA kernel failed: exit 1: {KERNEL_ERROR}" for i in range(8)),
    ]
