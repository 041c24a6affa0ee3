"""inference-perf end to end on both backends, run with the *least-privilege* kubeconfig.

On the control plane every step is real except what a container would do: the check creates the
per-run namespace, the model-cache PVC and download Job, the KAI Queue and the DynamoGraphDeployment
on a real apiserver as the user bound to ``deploy/rbac.yaml`` only (an RBAC denial is a red test).
The test controllers of :mod:`tests.harness.controlplane_dynamo` play the Dynamo operator
(frontend Service, pods pinned to the chosen node, DGD status), the StorageClass's provisioner and
the Job pods' output. The real scheduler binds the workers by ``nvidia.com/gpu`` and waits for the
volume, the real EndpointSlice controller publishes the frontend pod, and the check's chat-completion
probe goes through the apiserver's service proxy and its egress to the frontend's test server.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs  # one copy of each module across in-process runs
import aicr_pytest.inference
import aicr_pytest.plugin
from aicr_pytest.kube.client import RUN_ID_LABEL
from tests.cluster.check_runner import run_on_backend
from tests.harness import backends
from tests.harness.backends import ControlPlaneBackend, ControlPlaneSession, K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-inference.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-inference-snapshot.yaml"
PROFILE = "h100-eks-inference"
CHECK = "inference-perf"
#: Every kind the run (or what plays Dynamo for it) creates.
RUN_KINDS = (
    ("nvidia.com/v1beta1", "DynamoGraphDeployment"),
    ("batch/v1", "Job"),
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Secret"),
    ("scheduling.run.ai/v2", "Queue"),
)


def run_inference(pytester: pytest.Pytester, backend: K8sBackend) -> tuple[dict[str, Any], str]:
    run = run_on_backend(pytester, backend, phase="performance", recipe=RECIPE, snapshot=SNAPSHOT)
    return run.tests[CHECK], run.run_id


def leftovers(backend: K8sBackend, run_id: str) -> list[str]:
    found = []
    for api, kind in RUN_KINDS:
        try:
            items = backend.list(api, kind, None, label_selector=f"{RUN_ID_LABEL}={run_id}")
        except LookupError:  # the kind is not served (no KAI Queue CRD)
            continue
        found += [
            f"{kind} {(o.get('metadata') or {}).get('namespace')}/{o['metadata']['name']}" for o in items
        ]
    namespace = aicr_pytest.inference.workload_namespace(run_id)
    if backend.find("v1", "Namespace", namespace) is not None:
        found.append(f"Namespace {namespace}")
    return sorted(found)


def test_inference_perf_passes_with_least_privilege(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE)
    started = time.monotonic()
    t, run_id = run_inference(pytester, k8s_backend)
    elapsed = time.monotonic() - started
    assert t["status"] == "passed", (t.get("message"), t.get("stdout"), k8s_backend.controller_errors())
    # one worker per free GPU of the chosen node (8), ~13,500 tokens/sec each
    assert t["stdout"][-4:] == [
        "RESULT: Inference throughput: 108000.00 tokens/sec",
        "RESULT: Inference TTFT p99: 702.40 ms",
        "Throughput constraint: >= 50000 → PASS",
        "TTFT p99 constraint: <= 2000 → PASS",
    ]
    assert "configured policy: device-plugin-extended-resource" in t["stdout"]
    node = (
        next(line for line in t["stdout"] if "node-local decision for" in line).rsplit(" ", 1)[-1].rstrip(")")
    )
    chosen = k8s_backend.find("v1", "Node", node)
    assert chosen is not None
    assert chosen["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"

    if k8s_backend.name == "controlplane":
        assert isinstance(k8s_backend, ControlPlaneBackend)
        dynamo = k8s_backend.session.player("dynamo-controller")
        volumes = k8s_backend.session.player("volume-provisioner")
        namespace = aicr_pytest.inference.workload_namespace(run_id)
        # the real scheduler bound all 8 workers to the chosen node, and the model cache's volume
        # was provisioned there (WaitForFirstConsumer: the download pod's node)
        assert dynamo.placements[f"{namespace}/{aicr_pytest.inference.DEPLOYMENT_NAME}"] == [node]
        assert volumes.provisioned[f"{namespace}/{aicr_pytest.inference.MODEL_CACHE_PVC}"] != ""
        # the check's probe reached the frontend's server through the apiserver's service proxy
        assert ("POST", "/v1/chat/completions") in dynamo.requests
        assert elapsed < 120, f"inference-perf on the control plane took {elapsed:.1f}s"

    # the run's cleanup removed everything: the per-run namespace (real namespace controller on the
    # control plane, which also removes the DGD's pods) and the AIPerf Job in the check namespace
    assert wait_no_leftovers(k8s_backend, run_id) == []
    assert k8s_backend.controller_errors() == []


def wait_no_leftovers(backend: K8sBackend, run_id: str, timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := leftovers(backend, run_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def test_low_throughput_fails_the_constraint_and_cleans_up(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    """Fault ``inference-low-throughput`` (2,500 tokens/sec per GPU): the same fault name on both
    backends; on the control plane the AIPerf player reports it."""
    k8s_backend.seed_profile(PROFILE, ["inference-low-throughput"])
    t, run_id = run_inference(pytester, k8s_backend)
    assert t["status"] == "failed", (t.get("message"), k8s_backend.controller_errors())
    assert t["message"] == (
        'inference throughput 20000.00 tokens/sec does not satisfy constraint ">= 50000" (with 10% tolerance)'
    )
    assert t["stdout"][-4:] == [
        "RESULT: Inference throughput: 20000.00 tokens/sec",
        "RESULT: Inference TTFT p99: 702.40 ms",
        "Throughput constraint: >= 50000 → FAIL",
        "TTFT p99 constraint: <= 2000 → PASS",
    ]
    assert wait_no_leftovers(k8s_backend, run_id) == []
    assert k8s_backend.controller_errors() == []


def test_endpoint_that_never_serves_times_out_and_cleans_up(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    """Fault ``inference-endpoint-down``: every probe through the service proxy gets 503 for the
    whole 5-minute health timeout (a probe every 10 s; the check's sleeps cost no real time)."""
    k8s_backend.seed_profile(PROFILE, ["inference-endpoint-down"])
    served: list[tuple[str, str]] = []
    if isinstance(k8s_backend, ControlPlaneBackend):
        served = k8s_backend.session.player("dynamo-controller").requests
    before = len(served)
    t, run_id = run_inference(pytester, k8s_backend)
    assert t["status"] == "failed", (t.get("message"), k8s_backend.controller_errors())
    assert t["message"] == (
        "[TIMEOUT] timed out waiting for inference endpoint to serve requests: context deadline exceeded"
    )
    if isinstance(k8s_backend, ControlPlaneBackend):  # every probe reached the frontend's server
        assert 30 <= sum(1 for r in served[before:] if r == ("POST", "/v1/chat/completions")) <= 32
    assert wait_no_leftovers(k8s_backend, run_id) == []
    assert k8s_backend.controller_errors() == []


def test_profile_switch_converges_both_ways(controlplane_session: ControlPlaneSession) -> None:
    """A worker's tests may need training, then inference, then training again: each switch leaves
    exactly the target profile's objects (the GPU DeviceClass/ResourceSlices of training, Dynamo of
    inference) and its workloads available."""
    cp = controlplane_session.cp
    backend = ControlPlaneBackend(controlplane_session)
    operator = "dynamo-platform-dynamo-operator-controller-manager"

    def state() -> tuple[bool, bool]:
        device_class = backend.find("resource.k8s.io/v1", "DeviceClass", "gpu.nvidia.com") is not None
        dynamo = backend.find("apps/v1", "Deployment", operator, "dynamo-system")
        return device_class, dynamo is not None and dynamo["status"].get("availableReplicas") == 1

    def gpu_slices() -> list[str]:  # the DRA driver's GPU slices (not a ComputeDomain's IMEX channels)
        slices = backend.list("resource.k8s.io/v1", "ResourceSlice")
        return sorted(s["spec"]["nodeName"] for s in slices if s["spec"]["driver"] == "gpu.nvidia.com")

    controlplane_session.seed_profile("h100-eks-training")
    assert state() == (True, False)
    assert gpu_slices() == backends.gpu_node_names(cp, "NVIDIA-H100-80GB-HBM3")
    controlplane_session.seed_profile("h100-eks-inference")
    assert state() == (False, True)
    assert gpu_slices() == []
    controlplane_session.seed_profile("h100-eks-training")
    assert state() == (True, False)
    assert backend.find("v1", "Namespace", "dynamo-system") is None
    assert controlplane_session.current == ("h100-eks-training", ())

    # a faulted profile: one device-plugin pod crash-loops (its status patched as a kubelet would
    # report it; the real DaemonSet controller counts it unready), then heals when the fault goes
    def device_plugin() -> tuple[int, int, list[str]]:
        ds = backend.find("apps/v1", "DaemonSet", "nvidia-device-plugin-daemonset", "gpu-operator")
        assert ds is not None
        pods = backend.list("v1", "Pod", "gpu-operator")
        waiting = [
            str(c["state"]["waiting"]["reason"])
            for p in pods
            if any(
                r["name"] == "nvidia-device-plugin-daemonset"
                for r in p["metadata"].get("ownerReferences") or []
            )
            for c in p["status"].get("containerStatuses") or []
            if "waiting" in c.get("state", {})
        ]
        return ds["status"]["desiredNumberScheduled"], ds["status"].get("numberReady", 0), waiting

    desired = device_plugin()[0]
    controlplane_session.seed_profile("h100-eks-training", ["device-plugin-crashloop"])
    assert device_plugin() == (desired, desired - 1, ["CrashLoopBackOff"])
    controlplane_session.seed_profile("h100-eks-training")
    assert device_plugin() == (desired, desired, [])
    print(f"\nprofile seeding and switches: {controlplane_session.profile_seconds}")
