"""``gpu-cuda-smoke`` end to end on the fake cluster: pass, fail (``uvm-missing``), skip and other.

Real plugin + real facade + the fake cluster's CUDA smoke player, through pytester (the clock
auto-advances while the check blocks).  Both backends: tests/cluster/test_node_health_backends.py.
"""

from __future__ import annotations

from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.players.cuda_smoke import KERNEL_ERROR
from tests.cluster.test_node_health_checks import GPU_NODES, PROFILE, run_checks

CHECK = "gpu-cuda-smoke"
LABEL = "app.kubernetes.io/name=aicr-cuda-smoke"


def smoke_pods(fc: FakeCluster) -> list[dict[str, Any]]:
    return fc.list("v1", "Pod", None, label_selector=LABEL)


def test_smoke_passes_with_one_pod_per_node_holding_all_its_gpus(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    created: list[dict[str, Any]] = []
    fc.sim.on_create("", "v1", "pods", lambda sim, pod: created.append(pod))
    run = run_checks(pytester, fc, CHECK)
    test = run.tests[CHECK]
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"][-1] == (
        "CUDA smoke passed on 4 nodes: 32 GPUs, a CUDA kernel ran on each; "
        "/dev/nvidia-uvm and /dev/nvidia-uvm-tools present"
    )
    pods = [p for p in created if p["metadata"]["labels"].get("app.kubernetes.io/name") == "aicr-cuda-smoke"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == GPU_NODES
    for pod in pods:
        container = pod["spec"]["containers"][0]
        assert container["image"] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert pod["metadata"]["labels"]["aicr.run/run-id"] == run.run_id
        assert pod["metadata"]["name"].endswith(run.run_id)
    assert smoke_pods(fc) == []  # the run cleaned up after itself
    assert sorted(test["extra"]["aicr.gpuCudaSmoke"]["pods"]) == GPU_NODES


def test_uvm_missing_fails_naming_the_node_and_each_gpu(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["uvm-missing"])
    test = run_checks(pytester, fc, CHECK).tests[CHECK]
    assert test["status"] == "failed"
    pod = test["extra"]["aicr.gpuCudaSmoke"]["pods"]["h100-3"]
    assert test["message"].splitlines() == [
        f"node h100-3: /dev/nvidia-uvm is missing in the CUDA pod {pod} (CUDA cannot run)",
        *(f"node h100-3 GPU {i}: the CUDA kernel failed: exit 1: {KERNEL_ERROR}" for i in range(8)),
    ]


def test_no_targeted_gpu_node_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    test = run_checks(pytester, fc, CHECK, extra=("--aicr-node-selector", "aicr.test/none=x")).tests[CHECK]
    assert test["status"] == "skipped"
    assert test["message"] == "no targeted GPU node: gpu-cuda-smoke has no GPU to run a CUDA kernel on"
    assert smoke_pods(fc) == []


def test_unparsable_output_is_other_naming_the_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    from aicr_pytest.testing.simulator import PodScript

    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.script(
        PodScript(
            labels={"app.kubernetes.io/name": "aicr-cuda-smoke"},
            predicate=lambda pod: pod["spec"]["nodeName"] == "h100-2",
            logs="exec /bin/sh: exec format error\n",
        )
    )
    test = run_checks(pytester, fc, CHECK).tests[CHECK]
    assert test["status"] == "other"
    pod = test["extra"]["aicr.gpuCudaSmoke"]["pods"]["h100-2"]
    assert test["message"] == (
        f"node h100-2: the CUDA smoke pod {pod} printed output that cannot be read "
        "(no end line: the script did not finish)"
    )


def test_a_pod_that_never_runs_is_other_naming_the_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    from aicr_pytest.testing.simulator import PodScript

    fc = aicr_fake_cluster_factory(PROFILE)
    fc.sim.script(
        PodScript(
            labels={"app.kubernetes.io/name": "aicr-cuda-smoke"},
            predicate=lambda pod: pod["spec"]["nodeName"] == "h100-0",
            start_after=10_000.0,
        )
    )
    test = run_checks(pytester, fc, CHECK).tests[CHECK]
    assert test["status"] == "other"
    pod = test["extra"]["aicr.gpuCudaSmoke"]["pods"]["h100-0"]
    assert test["message"].startswith(f"node h100-0: the CUDA smoke pod {pod} never ran within 300s (")


def test_the_cuda_smoke_image_is_configurable(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    created: list[dict[str, Any]] = []
    fc.sim.on_create("", "v1", "pods", lambda sim, pod: created.append(pod))
    image = "registry.local:5000/mirror/cuda-sample:vectoradd-cuda13.0.0"
    run = run_checks(pytester, fc, CHECK, extra=("--aicr-cuda-smoke-image", image))
    assert run.tests[CHECK]["status"] == "passed", run.tests[CHECK].get("message")
    pods = [p for p in created if p["metadata"]["labels"].get("app.kubernetes.io/name") == "aicr-cuda-smoke"]
    assert pods and {p["spec"]["containers"][0]["image"] for p in pods} == {image}
    assert run.tests[CHECK]["extra"]["aicr.gpuCudaSmoke"]["image"] == image
