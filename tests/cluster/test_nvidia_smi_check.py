"""``check-nvidia-smi`` end to end: real plugin + real facade + the fake cluster's nvidia-smi player.

Each scenario runs the bundled check through pytester against a FakeCluster profile, with the
check's clock being the fake cluster's clock and auto-advance on while the check runs: the check
waits for its pods with a watch, the fake moves its clock to the simulated kubelet's next step
while the watch blocks, and a pod that never starts costs no real time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.deployment.nvidia_smi
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.deployment import DEFAULT_NVIDIA_SMI_IMAGE, VERIFY_CONTAINER, VERIFY_POD_PREFIX
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import Obj
from tests.cluster.check_runner import run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
CHECK = "check-nvidia-smi"
GPU_NODES = ["h100-0", "h100-1", "h100-2", "h100-3"]
RUN_LABEL = "aicr.run/run-id"


def only_nvidia_smi(recipe: dict[str, Any] | None = None) -> dict[str, Any]:
    """The example recipe with ``check-nvidia-smi`` as its only check."""
    doc = recipe if recipe is not None else yamlio.load(RECIPE.read_text())
    doc["validation"] = {"deployment": {"checks": [CHECK]}}
    return doc


def run_check(
    pytester: pytest.Pytester, fc: FakeCluster, *extra: str, recipe: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the check; returns (its CTRF test entry, the whole report)."""
    run = run_on_fake(
        pytester, fc, phase="deployment", recipe=only_nvidia_smi(recipe), snapshot=SNAPSHOT, extra=extra
    )
    return run.tests[CHECK], run.report


def run_id_of(report: dict[str, Any]) -> str:
    return str(report["extra"]["aicr.runId"])


def verify_pods(fc: FakeCluster, run_id: str | None = None) -> list[Obj]:
    selector = f"{RUN_LABEL}={run_id}" if run_id else None
    return [
        p
        for p in fc.list("v1", "Pod", None, label_selector=selector)
        if p["metadata"]["name"].startswith(VERIFY_POD_PREFIX)
    ]


def record_verify_pods(fc: FakeCluster) -> list[Obj]:
    """Every verify pod created from now on (as created)."""
    created: list[Obj] = []

    def on_pod(sim: Simulator, pod: Obj) -> None:
        if pod["metadata"]["name"].startswith(VERIFY_POD_PREFIX):
            created.append(pod)

    fc.sim.on_create("", "v1", "pods", on_pod)
    return created


def node_lines(nodes: list[str], gpus: int = 8) -> list[str]:
    return [f"  {n}: OK ({gpus} GPU(s), driver 580.95.05)" for n in nodes]


# ------------------------------------------------------------------------------------- pass --
def test_healthy_profile_verifies_every_gpu_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    created = record_verify_pods(fc)
    test, report = run_check(pytester, fc)
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"] == [
        "Found 4 GPU node(s):",
        *(f"  {n}" for n in GPU_NODES),
        "All 4 GPU node(s) available. Verifying...",
        *node_lines(GPU_NODES),
        "nodesValidated: 4/4",
        "Successfully verified GPU on all 4 nodes",
    ]
    run_id = run_id_of(report)
    # one pod per node, pinned to it, asking for all its GPUs, default CUDA image, tolerate-all
    assert sorted(p["spec"]["nodeName"] for p in created) == GPU_NODES
    for pod in created:
        container = pod["spec"]["containers"][0]
        assert container["name"] == VERIFY_CONTAINER
        assert container["image"] == DEFAULT_NVIDIA_SMI_IMAGE
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
        assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]
        assert pod["metadata"]["namespace"] == "aicr-validation"
        assert pod["metadata"]["labels"][RUN_LABEL] == run_id
        assert pod["metadata"]["name"] == f"{VERIFY_POD_PREFIX}{pod['spec']['nodeName']}-{run_id}"
    extra = test["extra"]["aicr.nvidiaSmi"]
    assert extra["image"] == DEFAULT_NVIDIA_SMI_IMAGE
    assert sorted(extra["pods"]) == GPU_NODES
    # cleanup: nothing labelled with the run id is left (pods, namespace created by the run)
    assert verify_pods(fc, run_id) == []
    assert fc.list("v1", "Pod", None, label_selector=f"{RUN_LABEL}={run_id}") == []
    assert fc.find("v1", "Namespace", "aicr-validation") is None


def test_cordoned_gpu_node_is_reported_not_verified(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["gpu-node-cordoned"])
    created = record_verify_pods(fc)
    test, _ = run_check(pytester, fc)
    assert test["status"] == "passed", test.get("message")
    rest = GPU_NODES[1:]
    assert test["stdout"] == [
        "Found 3 GPU node(s):",
        *(f"  {n}" for n in rest),
        "  h100-0: cordoned (spec.unschedulable), not verified",
        "All 3 GPU node(s) available. Verifying...",
        *node_lines(rest),
        "nodesValidated: 3/4",
        "Successfully verified GPU on all 3 nodes",
    ]
    assert sorted(p["spec"]["nodeName"] for p in created) == rest


def test_node_selector_and_tolerations_are_honoured(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    created = record_verify_pods(fc)
    test, _ = run_check(
        pytester,
        fc,
        "--aicr-node-selector",
        "kubernetes.io/hostname=h100-2",
        "--aicr-toleration",
        "nvidia.com/gpu:NoSchedule",
    )
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"][-1] == "Successfully verified GPU on all 1 nodes"
    (pod,) = created
    assert pod["spec"]["nodeName"] == "h100-2"
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "h100-2"}
    assert pod["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_nvidia_smi_image_flag_is_used(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    image = "registry.internal.example/mirror/cuda:13.0.0-base-ubuntu22.04"
    test, report = run_check(pytester, fc, "--aicr-nvidia-smi-image", image, "--aicr-no-cleanup")
    assert test["status"] == "passed", test.get("message")
    pods = verify_pods(fc, run_id_of(report))  # kept by --no-cleanup
    assert sorted(p["spec"]["nodeName"] for p in pods) == GPU_NODES
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {image}
    assert test["extra"]["aicr.nvidiaSmi"]["image"] == image


def test_nvidia_smi_image_env_is_used(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    image = "airgap.example/cuda:13.0.0-base"
    monkeypatch.setenv("AICR_NVIDIA_SMI_IMAGE", image)
    created = record_verify_pods(fc)
    test, _ = run_check(pytester, fc)
    assert test["status"] == "passed", test.get("message")
    assert {p["spec"]["containers"][0]["image"] for p in created} == {image}


def test_two_runs_use_different_pod_names(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    created = record_verify_pods(fc)
    first, first_report = run_check(pytester, fc, "--aicr-no-cleanup")  # its pods stay, as leftovers would
    second, second_report = run_check(pytester, fc)
    assert first["status"] == second["status"] == "passed", (first.get("message"), second.get("message"))
    first_id, second_id = run_id_of(first_report), run_id_of(second_report)
    assert first_id != second_id

    def names(run_id: str) -> set[str]:
        return {p["metadata"]["name"] for p in created if p["metadata"]["labels"][RUN_LABEL] == run_id}

    assert len(names(first_id)) == len(names(second_id)) == 4
    assert names(first_id).isdisjoint(names(second_id))
    # the second run deleted only its own pods: the first run's are untouched
    assert {p["metadata"]["name"] for p in verify_pods(fc)} == names(first_id)


# ------------------------------------------------------------------------------------- fail --
def test_missing_gpu_fails_naming_the_node(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["nvidia-smi-missing-gpu"])
    test, _ = run_check(pytester, fc)
    assert test["status"] == "failed"
    error = (
        "[INTERNAL] nvidia-smi on node h100-3 shows 7 GPU(s), but the node advertises 8 "
        "(allocatable nvidia.com/gpu)"
    )
    assert test["message"] == f"[INTERNAL] GPU verification failed on 1/4 nodes: [h100-3 ({error})]"
    assert f"  h100-3: FAILED ({error})" in test["stdout"]
    assert "nodesValidated: 3/4" in test["stdout"]


def test_failing_nvidia_smi_fails_with_pod_debug(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    text = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    fc.sim.script(PodScript(name_prefix=f"{VERIFY_POD_PREFIX}h100-1-", logs=text, exit_code=9))
    test, _ = run_check(pytester, fc)
    assert test["status"] == "failed"
    message = test["message"]
    assert message.startswith(
        "[INTERNAL] GPU verification failed on 1/4 nodes: [h100-1 ([INTERNAL] pod failed on node h100-1\n"
    )
    assert "Container nvidia-smi-verify-container: terminated (reason=Error exitCode=9 message=)" in message
    assert "First 20 lines:\nNVIDIA-SMI has failed because it couldn't communicate" in message
    assert "failed (phase Failed))]" in message


def test_incomplete_output_fails_log_verification(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.sim.script(PodScript(name_prefix=f"{VERIFY_POD_PREFIX}h100-2-", logs="hello\n"))
    test, report = run_check(pytester, fc)
    assert test["status"] == "failed"
    pod = f"{VERIFY_POD_PREFIX}h100-2-{run_id_of(report)}"
    assert test["message"] == (
        "[INTERNAL] GPU verification failed on 1/4 nodes: [h100-2 ([INTERNAL] log verification failed "
        f"for pod aicr-validation/{pod}: missing [NVIDIA-SMI Driver Version: CUDA Version: "
        "GPU_CHECK_SUCCESS GPU query block])]"
    )


def test_node_selector_matching_no_gpu_node_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    test, _ = run_check(pytester, fc, "--aicr-node-selector", "pool=nope")
    assert test["status"] == "failed"
    assert test["message"] == "[INVALID_REQUEST] --node-selector pool=nope matches zero of 4 GPU nodes"
    assert verify_pods(fc) == []


# ------------------------------------------------------------------------------------- skip --
def test_no_gpu_nodes_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", faults=["gpu-operator-missing"])
    test, _ = run_check(pytester, fc)
    assert test["status"] == "skipped"
    assert test["message"] == "no GPU nodes found in the cluster"
    assert test["extra"] == {"skipReason": "no-gpu-nodes"}  # AICR's code, survives redaction


def test_only_cordoned_gpu_nodes_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    for node in GPU_NODES:
        fc.sim.cordon(node)
    test, _ = run_check(pytester, fc)
    assert test["status"] == "skipped"
    assert test["message"] == (
        "no schedulable GPU nodes found in the cluster (cordoned: [h100-0 h100-1 h100-2 h100-3])"
    )
    assert test["extra"] == {"skipReason": "no-schedulable-gpu-nodes"}


def test_busy_gpu_node_skips_init_containers_count(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "trainer-0", "namespace": "default"},
            "spec": {
                "nodeName": "h100-1",
                "initContainers": [
                    {"name": "warmup", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
                ],
                "containers": [{"name": "main", "image": "x"}],
            },
            "status": {"phase": "Running"},
        }
    )
    test, _ = run_check(pytester, fc)
    assert test["status"] == "skipped"
    assert test["message"] == "GPU nodes busy with existing workloads: [h100-1]"
    assert test["extra"] == {"skipReason": "nodes-busy"}
    assert verify_pods(fc) == []


# ------------------------------------------------------------------------------------ other --
def test_pod_that_never_starts_is_other_within_the_budget(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.sim.script(PodScript(name_prefix=f"{VERIFY_POD_PREFIX}h100-2-", waiting_reason="ImagePullBackOff"))
    started_fake, started_real = fc.clock.time(), time.monotonic()
    test, report = run_check(pytester, fc)
    assert test["status"] == "other"
    message = test["message"]
    pod = f"{VERIFY_POD_PREFIX}h100-2-{run_id_of(report)}"
    assert message.startswith(
        "[INTERNAL] GPU verification failed on 1/4 nodes: [h100-2 ([INTERNAL] pod failed on node h100-2\n"
        "Container nvidia-smi-verify-container: waiting (ImagePullBackOff: )\n"
        "Event: Failed — Error: ImagePullBackOff\n"
    )
    assert f"timed out after 570s waiting for pod aicr-validation/{pod}: phase=Pending" in message
    assert "  h100-0: OK (8 GPU(s), driver 580.95.05)" in test["stdout"]
    # the budget was spent in simulated time only
    assert fc.clock.time() - started_fake >= 570
    assert time.monotonic() - started_real < 60
    assert verify_pods(fc, run_id_of(report)) == []


def test_vanished_pod_is_other(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")

    def evict(sim: Simulator, pod: Obj) -> None:
        meta = pod["metadata"]
        if meta["name"].startswith(f"{VERIFY_POD_PREFIX}h100-1-"):
            sim.clock.call_later(0.5, lambda: fc.delete("v1", "Pod", meta["name"], meta["namespace"]))

    fc.sim.on_create("", "v1", "pods", evict)
    test, report = run_check(pytester, fc)
    assert test["status"] == "other"
    pod = f"{VERIFY_POD_PREFIX}h100-1-{run_id_of(report)}"
    assert f"pod aicr-validation/{pod} vanished while waiting for it" in test["message"]
    assert test["message"].startswith("[INTERNAL] GPU verification failed on 1/4 nodes: [h100-1 (")


def test_node_list_api_error_is_other(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    fc.faults.deny("GET", r"^/api/v1/nodes$")
    test, _ = run_check(pytester, fc)
    assert test["status"] == "other"
    assert test["message"].startswith(
        "[INTERNAL] failed to query for GPU nodes: RBAC denied: cannot list nodes"
    )


# -------------------------------------------------------------------------------------- DRA --
def dra_only(fc: FakeCluster) -> None:
    """Strip ``nvidia.com/gpu`` from every node: GPUs are advertised by ResourceSlices only."""
    for node in GPU_NODES:
        obj = fc.get("v1", "Node", node)
        for key in ("allocatable", "capacity"):
            obj["status"][key].pop("nvidia.com/gpu", None)
        fc.add(obj)


def dra_recipe() -> dict[str, Any]:
    """The example recipe switched to the ``dra-resource-claim`` allocation policy."""
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    for ref in doc["componentRefs"]:
        if ref["name"] == "gpu-operator":
            ref.setdefault("overrides", {})["devicePlugin"] = {"enabled": False}
        if ref["name"] == "nvidia-dra-driver-gpu":
            ref["overrides"]["gpuResourcesEnabledOverride"] = True
            ref["overrides"]["resources"]["gpus"]["enabled"] = True
    return doc


def test_dra_only_nodes_get_a_resource_claim(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    dra_only(fc)
    created = record_verify_pods(fc)
    claims: list[Obj] = []
    fc.sim.on_create("resource.k8s.io", "v1", "resourceclaims", lambda sim, obj: claims.append(obj))
    test, report = run_check(pytester, fc, recipe=dra_recipe())
    assert test["status"] == "passed", test.get("message")
    assert test["stdout"][-1] == "Successfully verified GPU on all 4 nodes"
    assert sorted(c["metadata"]["name"] for c in claims) == sorted(p["metadata"]["name"] for p in created)
    for claim in claims:
        (request,) = claim["spec"]["devices"]["requests"]
        assert request["exactly"] == {
            "deviceClassName": "gpu.nvidia.com",
            "allocationMode": "ExactCount",
            "count": 8,
        }
    for pod in created:
        node = pod["spec"]["nodeSelector"]["kubernetes.io/hostname"]
        assert pod["spec"]["resourceClaims"] == [
            {"name": "gpu", "resourceClaimName": pod["metadata"]["name"]}
        ]
        assert "nodeName" not in pod["spec"] or pod["spec"]["nodeName"] == node
    run_id = run_id_of(report)
    assert fc.list("resource.k8s.io/v1", "ResourceClaim", None, label_selector=f"{RUN_LABEL}={run_id}") == []


def test_dra_only_nodes_without_dra_policy_are_reported_and_skipped(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training")
    dra_only(fc)
    test, _ = run_check(pytester, fc)
    assert test["status"] == "skipped"
    assert test["message"] == "no GPU nodes found in the cluster"
    assert "extra" not in test  # GPU nodes exist: AICR's no-gpu-nodes would be a wrong code
    assert (
        "  h100-0: DRA-only GPU node (no nvidia.com/gpu allocatable), verified only under the "
        "dra-resource-claim policy"
    ) in test["stdout"]
