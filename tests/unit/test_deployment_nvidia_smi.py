# ruff: noqa: E501  (exact user-facing messages are asserted verbatim)
"""check-nvidia-smi: node discovery, busy test, pod manifests, output parsing, verdict."""

from __future__ import annotations

from typing import Any

import pytest
from _gpu_objects import gpu_slice, node

from aicr_pytest import deployment as d
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.deployment import CheckFailed, GpuNode, GpuNodeInventory, NodeResult

QUERY_OK = """\
AICR_GPU_QUERY_BEGIN
0, NVIDIA H100 80GB HBM3, 580.95.05
1, NVIDIA H100 80GB HBM3, 580.95.05
AICR_GPU_QUERY_END
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
+-----------------------------------------------------------------------------------------+
GPU_CHECK_SUCCESS
"""


# ---- discovery ----------------------------------------------------------------------------------------
def test_device_plugin_nodes_and_cordoned_reported() -> None:
    nodes = [node("b", 8), node("a", 4), node("cpu", None), node("zero", 0), node("c", 8, unschedulable=True)]
    inv = d.discover_gpu_nodes(nodes)
    assert [(g.name, g.gpus, g.mode) for g in inv.nodes] == [
        ("a", 4, "device-plugin"),
        ("b", 8, "device-plugin"),
    ]
    assert inv.cordoned == ("c",)
    assert inv.total_gpu_nodes == 3


def test_dra_only_nodes_detected_from_resource_slices() -> None:
    nodes = [node("dp", 8), node("dra", None)]
    slices = [gpu_slice("s1", "dra", 4), gpu_slice("net", "dra", 2, driver="roce.networking.k8s.aws")]
    inv = d.discover_gpu_nodes(nodes, slices, policy="device-plugin-extended-resource")
    assert [g.name for g in inv.nodes] == ["dp"]
    assert inv.dra_unverified == ("dra",)
    inv = d.discover_gpu_nodes(nodes, slices, policy="dra-resource-claim")
    assert [(g.name, g.gpus, g.mode) for g in inv.nodes] == [("dp", 8, "device-plugin"), ("dra", 4, "dra")]


def test_dra_slices_newest_generation_and_typed_devices() -> None:
    old = gpu_slice("s-old", "n", 8, pool="p", generation=1)
    new = gpu_slice("s-new", "n", 2, pool="p", generation=2)
    typed = gpu_slice("t", "m", 3)
    typed["spec"]["devices"][0]["attributes"] = {"type": {"string": "mig"}}
    typed["spec"]["devices"][1]["attributes"] = {"type": {"string": "gpu"}}
    assert d.dra_gpu_devices([old, new, typed]) == {"n": 2, "m": 2}


def test_node_selector_narrows_and_zero_match_fails() -> None:
    nodes = [node("a", 8, labels={"pool": "x"}), node("b", 8, labels={"pool": "y"})]
    inv = d.discover_gpu_nodes(nodes, node_selector={"pool": "y"})
    assert [g.name for g in inv.nodes] == ["b"]
    with pytest.raises(CheckFailed) as exc:
        d.discover_gpu_nodes(nodes, node_selector={"pool": "z"})
    assert str(exc.value) == "[INVALID_REQUEST] --node-selector pool=z matches zero of 2 GPU nodes"


# ---- plan: listing, busy test, skips ------------------------------------------------------------------
def pod(
    name: str,
    node_name: str,
    *,
    gpus: int = 0,
    init_gpus: int = 0,
    phase: str = "Running",
    claims: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    def container(n: str, g: int) -> dict[str, Any]:
        return {"name": n, "resources": {"limits": {"nvidia.com/gpu": str(g)}} if g else {}}

    spec: dict[str, Any] = {"nodeName": node_name, "containers": [container("main", gpus)]}
    if init_gpus:
        spec["initContainers"] = [container("init", init_gpus)]
    if claims is not None:
        spec["resourceClaims"] = claims
    return {"metadata": {"name": name, "namespace": "work"}, "spec": spec, "status": {"phase": phase}}


def claim(name: str, driver: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "work"},
        "status": {
            "allocation": {"devices": {"results": [{"driver": driver, "pool": "n1", "device": "d0"}]}}
        },
    }


@pytest.mark.parametrize(
    ("pods", "claims", "busy"),
    [
        ([], [], False),
        ([pod("p", "n1", gpus=1)], [], True),
        ([pod("p", "n1", gpus=1, phase="Succeeded")], [], False),
        ([pod("p", "n1", gpus=1, phase="Failed")], [], False),
        ([pod("p", "n1", init_gpus=1)], [], True),
        ([pod("p", "n2", gpus=1)], [], False),
        (
            [pod("p", "n1", claims=[{"name": "g", "resourceClaimName": "gpu-claim"}])],
            [claim("gpu-claim", "gpu.nvidia.com")],
            True,
        ),
        (
            [pod("p", "n1", claims=[{"name": "n", "resourceClaimName": "net"}])],
            [claim("net", "roce.networking.k8s.aws")],
            False,
        ),
        ([pod("p", "n1", claims=[{"name": "g", "resourceClaimName": "unknown"}])], [], True),
        ([pod("p", "n1", claims=[{"name": "g", "resourceClaimTemplateName": "t"}])], [], True),
    ],
)
def test_busy_test(pods: list[dict[str, Any]], claims: list[dict[str, Any]], busy: bool) -> None:
    assert bool(d.gpu_busy_reasons("n1", pods, claims)) is busy


def test_busy_claim_resolved_through_pod_status() -> None:
    p = pod("p", "n1", claims=[{"name": "g", "resourceClaimTemplateName": "t"}])
    p["status"]["resourceClaimStatuses"] = [{"name": "g", "resourceClaimName": "p-g-abcde"}]
    assert d.gpu_busy_reasons("n1", [p], [claim("p-g-abcde", "roce.networking.k8s.aws")]) == []
    assert d.gpu_busy_reasons("n1", [p], [claim("p-g-abcde", "gpu.nvidia.com")]) == [
        "work/p holds ResourceClaim p-g-abcde"
    ]


def test_list_failure_counts_as_busy() -> None:
    assert d.gpu_busy_reasons("n1", None) == ["could not list pods on the node"]


def inventory(
    *names: str, cordoned: tuple[str, ...] = (), dra_unverified: tuple[str, ...] = ()
) -> GpuNodeInventory:
    return GpuNodeInventory(
        tuple(GpuNode(n, 8) for n in names), cordoned, dra_unverified, len(names) + len(cordoned)
    )


def test_plan_lists_nodes_and_cordoned() -> None:
    lines: list[str] = []
    got = d.plan_nvidia_smi(
        inventory("a", "b", cordoned=("c",), dra_unverified=("x",)), {"a": [], "b": []}, emit=lines.append
    )
    assert [g.name for g in got] == ["a", "b"]
    assert lines == [
        "Found 2 GPU node(s):",
        "  a",
        "  b",
        "  c: cordoned (spec.unschedulable), not verified",
        "  x: DRA-only GPU node (no nvidia.com/gpu allocatable), verified only under the dra-resource-claim policy",
        "All 2 GPU node(s) available. Verifying...",
    ]


def test_plan_skips_without_gpu_nodes() -> None:
    with pytest.raises(CheckSkip) as exc:
        d.plan_nvidia_smi(inventory(), {}, emit=lambda _: None)
    assert exc.value.reason == "no GPU nodes found in the cluster"


def test_plan_only_cordoned_nodes_is_reported() -> None:
    lines: list[str] = []
    with pytest.raises(CheckSkip) as exc:
        d.plan_nvidia_smi(inventory(cordoned=("c1", "c2")), {}, emit=lines.append)
    assert exc.value.reason == "no schedulable GPU nodes found in the cluster (cordoned: [c1 c2])"
    assert lines == [
        "  c1: cordoned (spec.unschedulable), not verified",
        "  c2: cordoned (spec.unschedulable), not verified",
    ]


def test_plan_busy_nodes_skip() -> None:
    pods = {"a": [pod("p", "a", gpus=1)], "b": [], "c": None}
    with pytest.raises(CheckSkip) as exc:
        d.plan_nvidia_smi(inventory("a", "b", "c"), pods, emit=lambda _: None)
    assert exc.value.reason == "GPU nodes busy with existing workloads: [a c]"
    assert exc.value.code == "nodes-busy"  # a is confirmed busy


# ---- AICR's CTRF extra.skipReason code, only where the condition is exactly the code's -------------------
@pytest.mark.parametrize(
    ("inv", "pods", "code"),
    [
        (inventory(), {}, "no-gpu-nodes"),
        (inventory(cordoned=("c1",)), {}, "no-schedulable-gpu-nodes"),
        # DRA-only nodes exist but this policy cannot verify them: neither code is true
        (inventory(dra_unverified=("x",)), {}, None),
        (inventory(cordoned=("c1",), dra_unverified=("x",)), {}, None),
        # every "busy" node is a failed pod list: occupancy was never seen
        (inventory("a", "b"), {"a": None, "b": []}, None),
        (inventory("a"), {"a": [pod("p", "a", gpus=1)]}, "nodes-busy"),
    ],
    ids=["none", "all-cordoned", "dra-only", "cordoned-and-dra", "probe-failed", "busy"],
)
def test_plan_skip_codes(inv: GpuNodeInventory, pods: dict[str, Any], code: str | None) -> None:
    with pytest.raises(CheckSkip) as exc:
        d.plan_nvidia_smi(inv, pods, emit=lambda _: None)
    assert exc.value.code == code


# ---- pod manifests ----------------------------------------------------------------------------------------
def test_pod_name_is_run_scoped_and_dns_safe() -> None:
    assert (
        d.verify_pod_name("ip-10-0-1-2.ec2.internal", "r1a2b3c4")
        == "nvidia-smi-verify-ip-10-0-1-2-ec2-internal-r1a2b3c4"
    )
    long_a = d.verify_pod_name("a" * 80 + ".x", "run-gw0")
    long_b = d.verify_pod_name("a" * 80 + ".y", "run-gw0")
    assert len(long_a) <= 63 and long_a != long_b and long_a.endswith("-run-gw0")
    assert d.verify_pod_name("Node_1", "R") == "nvidia-smi-verify-node-1-r"


def test_device_plugin_pod() -> None:
    manifest = d.build_verify_pod(
        GpuNode("gpu-1", 8),
        name="nvidia-smi-verify-gpu-1-r1",
        namespace="aicr-validation",
        labels={"aicr.run/run-id": "r1"},
    )
    spec = manifest["spec"]
    (container,) = spec["containers"]
    assert manifest["metadata"]["labels"]["aicr.run/run-id"] == "r1"
    assert manifest["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "aicr-pytest"
    assert manifest["metadata"]["namespace"] == "aicr-validation"
    assert spec["nodeName"] == "gpu-1" and "nodeSelector" not in spec
    assert spec["restartPolicy"] == "Never"
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert container["image"] == "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"
    assert container["resources"] == {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}
    script = container["args"][0]
    assert "nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader" in script
    assert script.rstrip().endswith("echo GPU_CHECK_SUCCESS") and script.startswith("set -e")


def test_pod_image_selector_and_tolerations_applied() -> None:
    from aicr_pytest.core.settings import Toleration

    manifest = d.build_verify_pod(
        GpuNode("gpu-1", 1),
        name="p",
        namespace="ns",
        image="registry.local/cuda:13",
        node_selector={"pool": "gpu"},
        tolerations=[
            Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"),
            {"operator": "Exists", "key": "k"},
        ],
    )
    spec = manifest["spec"]
    assert spec["containers"][0]["image"] == "registry.local/cuda:13"
    assert spec["nodeSelector"] == {"pool": "gpu"}
    assert spec["tolerations"] == [
        {"operator": "Exists", "key": "nvidia.com/gpu", "effect": "NoSchedule"},
        {"operator": "Exists", "key": "k"},
    ]


def test_dra_pod_and_claim() -> None:
    gpu = GpuNode("dra-node", 4, "dra")
    manifest = d.build_verify_pod(gpu, name="p", namespace="ns", claim_name="p-gpus")
    spec = manifest["spec"]
    assert "nodeName" not in spec  # the scheduler must allocate the claim
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "dra-node"}
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimName": "p-gpus"}]
    assert spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    claim_v1 = d.build_verify_claim(gpu, name="p-gpus", namespace="ns")
    assert claim_v1["apiVersion"] == "resource.k8s.io/v1"
    assert claim_v1["spec"]["devices"]["requests"] == [
        {
            "name": "gpu",
            "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 4},
        }
    ]
    claim_beta = d.build_verify_claim(
        gpu, name="p-gpus", namespace="ns", api_version="resource.k8s.io/v1beta1"
    )
    assert claim_beta["spec"]["devices"]["requests"][0]["count"] == 4
    with pytest.raises(ValueError):
        d.build_verify_pod(gpu, name="p", namespace="ns")


# ---- output parsing and node verdicts ----------------------------------------------------------------------
def test_parse_output() -> None:
    report, missing = d.parse_nvidia_smi_output(QUERY_OK)
    assert missing == []
    assert report.count == 2 and report.driver_versions == ("580.95.05",)
    assert report.gpus[0] == ("0", "NVIDIA H100 80GB HBM3", "580.95.05")


def test_newer_driver_banner_spelling_accepted() -> None:
    logs = QUERY_OK.replace("Driver Version:", "KMD Version:").replace("CUDA Version:", "CUDA UMD Version:")
    assert d.parse_nvidia_smi_output(logs)[1] == []


def test_node_ok() -> None:
    got = d.verify_node_output(GpuNode("n", 2), namespace="ns", pod_name="p", logs=QUERY_OK)
    assert got == NodeResult("n", True, gpus=2, driver_version="580.95.05")


def test_node_missing_markers() -> None:
    got = d.verify_node_output(GpuNode("n", 2), namespace="ns", pod_name="p", logs="NVIDIA-SMI only\n")
    assert got.error == (
        "[INTERNAL] log verification failed for pod ns/p: missing [Driver Version: CUDA Version: GPU_CHECK_SUCCESS "
        "GPU query block]"
    )


def test_node_fewer_gpus_than_allocatable() -> None:
    got = d.verify_node_output(GpuNode("n", 8), namespace="ns", pod_name="p", logs=QUERY_OK)
    assert got.error == (
        "[INTERNAL] nvidia-smi on node n shows 2 GPU(s), but the node advertises 8 (allocatable nvidia.com/gpu)"
    )
    dra = d.verify_node_output(GpuNode("n", 4, "dra"), namespace="ns", pod_name="p", logs=QUERY_OK)
    assert str(dra.error).endswith("advertises 4 (gpu.nvidia.com ResourceSlice devices)")


def test_pod_failure_text() -> None:
    pod_obj = {
        "status": {
            "containerStatuses": [
                {
                    "name": "c",
                    "state": {
                        "terminated": {"reason": "Error", "exitCode": 9, "message": "NVML init failed"}
                    },
                },
                {"name": "w", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "pull denied"}}},
            ]
        }
    }
    events = [
        {"type": "Warning", "reason": "Failed", "message": "Error: ErrImagePull"},
        {"type": "Normal", "reason": "Scheduled", "message": "ok"},
    ]
    logs = "\n".join(f"line{i}" for i in range(30))
    text = d.format_pod_failure("n1", pod_obj, events, logs, "pod failed")
    assert text == (
        "[INTERNAL] pod failed on node n1\n"
        "Container c: terminated (reason=Error exitCode=9 message=NVML init failed)\n"
        "Container w: waiting (ImagePullBackOff: pull denied)\n"
        "Event: Failed — Error: ErrImagePull\n"
        "First 20 lines:\n" + "\n".join(f"line{i}" for i in range(20)) + ": pod failed"
    )
    assert "no additional debug info available" in d.format_pod_failure("n1", None, [], "", "gone")


def test_create_failed_text() -> None:
    assert (
        d.MSG_CREATE_FAILED.format(err="already exists")
        == "[INTERNAL] failed to create verification pod: already exists"
    )


# ---- verdict ----------------------------------------------------------------------------------------
def test_summary_pass_with_cordoned_note() -> None:
    lines: list[str] = []
    msg = d.summarize_nvidia_smi(
        [
            NodeResult("b", True, gpus=8, driver_version="580"),
            NodeResult("a", True, gpus=8, driver_version="580"),
        ],
        emit=lines.append,
        cordoned=["c"],
    )
    assert lines == [
        "  a: OK (8 GPU(s), driver 580)",
        "  b: OK (8 GPU(s), driver 580)",
        "nodesValidated: 2/3",
        "Successfully verified GPU on all 2 nodes",
    ]
    assert msg == "Successfully verified GPU on all 2 nodes; 1 cordoned GPU node(s) not verified: [c]"


def test_summary_failure_names_nodes() -> None:
    lines: list[str] = []
    results = [
        NodeResult("b", False, "boom"),
        NodeResult("a", True, gpus=1, driver_version="1"),
        NodeResult("c", False, "late", inconclusive=True),
    ]
    with pytest.raises(CheckFailed) as exc:
        d.summarize_nvidia_smi(results, emit=lines.append)
    assert str(exc.value) == "[INTERNAL] GPU verification failed on 2/3 nodes: [b (boom) c (late)]"
    assert "  b: FAILED (boom)" in lines and "nodesValidated: 1/3" in lines


def test_summary_only_inconclusive_is_other() -> None:
    with pytest.raises(Inconclusive) as exc:
        d.summarize_nvidia_smi(
            [NodeResult("a", False, "pod vanished", inconclusive=True)], emit=lambda _: None
        )
    assert str(exc.value) == "[INTERNAL] GPU verification failed on 1/1 nodes: [a (pod vanished)]"
