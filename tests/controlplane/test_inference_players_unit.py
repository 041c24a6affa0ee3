"""The control plane's inference test controllers and profile switching, without binaries.

Pure pieces: the convergence plan between two profiles, the provisioner's PV for a claim, the
operator's pods for a DGD and its readiness counts, the AIPerf output against a stub apiserver, and
the egress proxy's routing (real sockets, local servers only).
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.testing.players import inference as play
from tests.harness import backends
from tests.harness import controlplane_dynamo as dyn
from tests.harness.egress import EgressProxy, egress_selector_config, parse_connect

GPU = ["gpu-h100-0", "gpu-h100-1"]
OTHER = ["system-0"]


def names(objs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objs)


# --- profile switching ------------------------------------------------------------------------------


def test_training_to_inference_adds_dynamo_and_drops_gpu_slices_and_back() -> None:
    training = backends.profile_objects("h100-eks-training", gpu_nodes=GPU, other_nodes=OTHER)
    inference = backends.profile_objects("h100-eks-inference", gpu_nodes=GPU, other_nodes=OTHER)
    delete, create = backends.plan_convergence(training, inference)
    assert names(delete) == [
        ("DeviceClass", "gpu.nvidia.com"),
        ("ResourceSlice", "gpu-h100-0-gpu.nvidia.com"),
        ("ResourceSlice", "gpu-h100-1-gpu.nvidia.com"),
    ]
    # CRDs are (re)created harmlessly (409) but never deleted: every profile shares them
    assert ("Namespace", "dynamo-system") in names(create)
    assert ("Deployment", "dynamo-platform-dynamo-operator-controller-manager") in names(create)
    back_delete, back_create = backends.plan_convergence(inference, training)
    # the namespaces go, and with them their Deployments (the operator; the served model's frontend
    # and worker in dynamo-workload), not deleted one by one; CRDs stay; the operator's
    # cluster-scoped validating webhook configuration goes too
    assert names(back_delete) == [
        ("Namespace", "dynamo-system"),
        ("Namespace", "dynamo-workload"),
        (
            "ValidatingWebhookConfiguration",
            "dynamo-platform-dynamo-operator-validating-webhook-configuration",
        ),
    ]
    assert names(back_create) == names(delete)


def test_same_profile_plans_nothing_and_changed_objects_are_replaced() -> None:
    objs = backends.profile_objects("h100-eks-training", gpu_nodes=GPU, other_nodes=OTHER)
    assert backends.plan_convergence(objs, objs) == ([], [])
    changed = json.loads(json.dumps(objs))
    deployment = next(o for o in changed if o["kind"] == "Deployment")
    deployment["spec"]["replicas"] = 3
    delete, create = backends.plan_convergence(objs, changed)
    assert names(delete) == names(create) == [("Deployment", deployment["metadata"]["name"])]
    assert create[0]["spec"]["replicas"] == 3


# --- the volume provisioner -------------------------------------------------------------------------

GP3 = {
    "metadata": {"name": "gp3", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
}


def claim(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "cache", "namespace": "ns", "uid": "u-1", "annotations": {}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "200Gi"}}, **spec},
        "status": {"phase": "Pending"},
    }


def test_provisioner_waits_for_the_schedulers_node_then_makes_a_prebound_pv() -> None:
    pvc = claim()
    assert dyn.provision(pvc, {"gp3": GP3}, "gp3") is None  # no consumer placed yet
    pvc["metadata"]["annotations"][dyn.SELECTED_NODE] = "gpu-h100-1"
    pv = dyn.provision(pvc, {"gp3": GP3}, "gp3")
    assert pv is not None
    assert pv["metadata"]["name"] == "pvc-u-1"
    assert pv["metadata"]["annotations"] == {dyn.PROVISIONED_BY: "ebs.csi.aws.com"}
    assert pv["spec"]["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "cache",
        "uid": "u-1",
    }
    assert pv["spec"]["capacity"] == {"storage": "200Gi"}
    assert pv["spec"]["storageClassName"] == "gp3"
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["gpu-h100-1"]


def test_provisioner_leaves_bound_unknown_and_static_claims_alone() -> None:
    bound = claim(volumeName="pv-x")
    bound["metadata"]["annotations"][dyn.SELECTED_NODE] = "n"
    assert dyn.provision(bound, {"gp3": GP3}, "gp3") is None
    assert dyn.provision(claim(storageClassName="nope"), {"gp3": GP3}, "gp3") is None
    static = {"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner"}
    assert dyn.provision(claim(storageClassName="local"), {"local": static}, None) is None
    assert dyn.provision(claim(), {"gp3": GP3}, None) is None  # no class and no default
    immediate = {**GP3, "volumeBindingMode": "Immediate"}
    pv = dyn.provision(claim(), {"gp3": immediate}, "gp3")
    assert pv is not None and "nodeAffinity" not in pv["spec"]


# --- the Dynamo operator ----------------------------------------------------------------------------


def dgd(workers: int = 2) -> dict[str, Any]:
    labels = {"aicr.run/run-id": "r1"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main", "image": "img"}]}}
    worker_spec = {
        "nodeSelector": {"kubernetes.io/hostname": "gpu-h100-0"},
        "containers": [{"name": "main", "image": "img", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    }
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "aicr-inference-perf", "namespace": "ns", "uid": "dgd-uid", "labels": labels},
        "spec": {
            "components": [
                {"name": "Frontend", "type": "frontend", "replicas": 1, "podTemplate": template},
                {
                    "name": "VllmDecodeWorker",
                    "type": "worker",
                    "replicas": workers,
                    "podTemplate": {"metadata": {"labels": labels}, "spec": worker_spec},
                },
            ]
        },
    }


def test_component_pods_follow_the_templates_and_are_owned_by_the_dgd() -> None:
    pods = dyn.component_pods(dgd(2))
    assert [p["metadata"]["name"] for p in pods] == [
        "aicr-inference-perf-frontend-0",
        "aicr-inference-perf-vllmdecodeworker-0",
        "aicr-inference-perf-vllmdecodeworker-1",
    ]
    for pod in pods:
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == (
            "DynamoGraphDeployment",
            "dgd-uid",
            True,
        )
        assert pod["metadata"]["labels"]["aicr.run/run-id"] == "r1"
        assert pod["spec"]["restartPolicy"] == "Always"
    frontend, worker = pods[0], pods[1]
    assert frontend["metadata"]["labels"][play.LABEL_COMPONENT_TYPE] == "frontend"
    assert frontend["spec"]["containers"][0]["ports"] == [{"name": "http", "containerPort": 8000}]
    assert worker["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-h100-0"}
    assert worker["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


def pod(component: str, phase: str = "Running", ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {play.LABEL_COMPONENT: component}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_ready_counts_only_running_ready_live_pods_and_status_follows() -> None:
    pods = [
        pod("Frontend"),
        pod("VllmDecodeWorker"),
        pod("VllmDecodeWorker", ready=False),
        pod("VllmDecodeWorker", phase="Pending", ready=False),
        pod("VllmDecodeWorker", deleting=True),
    ]
    counts = dyn.ready_counts(pods)
    assert counts == {"Frontend": 1, "VllmDecodeWorker": 1}
    comps = play.dgd_components(dgd(2))
    assert play.dgd_status(comps, counts)["state"] == "pending"
    assert play.dgd_status(comps, {"Frontend": 1, "VllmDecodeWorker": 2})["state"] == "successful"


class StubApiserver:
    """What :func:`dyn.inference_job_output` asks of the control plane."""

    def __init__(self, dgd_obj: dict[str, Any], proxy_status: int = 200) -> None:
        self.dgd = dgd_obj
        self.proxy_status = proxy_status
        self.posts: list[tuple[str, Any]] = []

    def get(self, path: str) -> Any:
        assert path == "/apis/nvidia.com/v1beta1/namespaces/ns/dynamographdeployments/aicr-inference-perf"
        return self.dgd

    def request(self, method: str, path: str, body: Any = None) -> Any:
        self.posts.append((path, body))
        if self.proxy_status != 200:
            raise urllib.error.HTTPError(path, self.proxy_status, "unavailable", {}, None)  # type: ignore[arg-type]
        return {"choices": []}


def aiperf_pod(url: str, concurrency: int = 512) -> dict[str, Any]:
    script = f"aiperf profile \"$AICR_MODEL\" --url '{url}' --concurrency {concurrency} --request-count 9"
    return {
        "metadata": {},
        "spec": {"containers": [{"name": "aiperf", "command": ["/bin/sh", "-c", script]}]},
    }


def test_aiperf_asks_the_endpoint_through_the_service_proxy_then_reports() -> None:
    api = StubApiserver(dgd(2))
    text, code = dyn.inference_job_output(api, aiperf_pod("http://aicr-inference-perf-frontend.ns.svc:8000"))  # type: ignore[arg-type]
    assert code == 0
    assert (
        api.posts[0][0]
        == "/api/v1/namespaces/ns/services/aicr-inference-perf-frontend:8000/proxy/v1/chat/completions"
    )
    doc = json.loads(text.split(play.SENTINEL)[1])
    assert doc["output_token_throughput"]["avg"] == 27_000.0  # 2 workers x 13,500
    assert doc["input_config"]["loadgen"]["concurrency"] == 512


def test_aiperf_fails_when_the_endpoint_does_not_answer_or_cannot_resolve() -> None:
    url = "http://aicr-inference-perf-frontend.ns.svc:8000"
    text, code = dyn.inference_job_output(StubApiserver(dgd(), proxy_status=503), aiperf_pod(url))  # type: ignore[arg-type]
    assert (text, code) == (f"aiperf: error: {url} answered HTTP 503 (SIMULATED)\n", 1)
    text, code = dyn.inference_job_output(StubApiserver(dgd()), aiperf_pod("http://localhost:8000"))  # type: ignore[arg-type]
    assert code == 1 and "cannot resolve" in text


# --- the egress proxy -------------------------------------------------------------------------------


def test_parse_connect() -> None:
    assert parse_connect(b"CONNECT 10.244.0.7:8000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") == (
        "10.244.0.7",
        8000,
    )
    assert parse_connect(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n") == ("::1", 443)
    for bad in (
        b"GET / HTTP/1.1\r\n\r\n",
        b"CONNECT host HTTP/1.1\r\n\r\n",
        b"CONNECT a:b:c HTTP/1.1\r\n\r\n",
    ):
        with pytest.raises(ValueError):
            parse_connect(bad)


def test_egress_selector_config_names_the_socket(tmp_path: Path) -> None:
    text = egress_selector_config(tmp_path / "e.sock")
    assert "kind: EgressSelectorConfiguration" in text and "- name: cluster" in text
    assert "proxyProtocol: HTTPConnect" in text and f"udsName: {tmp_path / 'e.sock'}" in text


class Echo(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"served {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def connect(sock_path: Path, target: str) -> tuple[socket.socket, bytes]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(sock_path))
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    return s, head


def get_through(s: socket.socket, path: str) -> bytes:
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    return data


@pytest.fixture
def echo_server() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_egress_routes_pod_ips_passes_real_addresses_and_refuses_unrouted_pods(
    tmp_path: Path, echo_server: ThreadingHTTPServer
) -> None:
    host, port = echo_server.server_address[:2]
    proxy = EgressProxy(tmp_path / "e.sock", simulated_networks=["10.244.0.1/16"]).start()
    try:
        proxy.route("10.244.0.9", 8000, (str(host), int(port)))
        s, head = connect(proxy.socket_path, "10.244.0.9:8000")
        assert head.startswith(b"HTTP/1.1 200")
        assert get_through(s, "/v1/models").endswith(b"served /v1/models")
        s.close()
        s, head = connect(proxy.socket_path, f"{host}:{port}")  # a real listener: passed through
        assert head.startswith(b"HTTP/1.1 200")
        assert get_through(s, "/direct").endswith(b"served /direct")
        s.close()
        proxy.unroute("10.244.0.9", 8000)
        s, head = connect(proxy.socket_path, "10.244.0.9:8000")  # no listener behind a made-up IP
        assert head.startswith(b"HTTP/1.1 502")
        s.close()
        assert proxy.connects == [
            (("10.244.0.9", 8000), (str(host), int(port))),
            ((str(host), int(port)), (str(host), int(port))),
            (("10.244.0.9", 8000), ("10.244.0.9", 8000)),
        ]
    finally:
        proxy.stop()
    assert not proxy.socket_path.exists()


def test_pod_states_of_a_faulted_profile_name_the_daemonset_pod_and_its_status() -> None:
    assert backends.profile_pod_states("h100-eks-training", gpu_nodes=GPU, other_nodes=OTHER) == []
    (state,) = backends.profile_pod_states(
        "h100-eks-training", ["device-plugin-crashloop"], gpu_nodes=GPU, other_nodes=OTHER
    )
    assert (state["namespace"], state["owner"], state["node"]) == (
        "gpu-operator",
        "DaemonSet/nvidia-device-plugin-daemonset",
        "gpu-h100-0",  # the fake's first H100 node, mapped onto the control plane's
    )
    (container,) = state["status"]["containerStatuses"]
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    ready = next(c for c in state["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"


def test_pod_states_refuse_what_the_control_plane_cannot_express(monkeypatch: pytest.MonkeyPatch) -> None:
    class PodType:
        kind = "Pod"

    stuck = {
        "metadata": {
            "name": "web-abc",
            "namespace": "apps",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d4f", "controller": True}],
        },
        "spec": {"nodeName": "system-0"},
        "status": {"phase": "Pending"},
    }
    monkeypatch.setattr(
        backends, "_profile_store", lambda *a: ([(PodType(), stuck)], {"system-0": "system-0"}, [])
    )
    with pytest.raises(ValueError, match="pod apps/web-abc of profile h100-eks-training"):
        backends.profile_pod_states("h100-eks-training", gpu_nodes=GPU, other_nodes=OTHER)


def test_a_crd_only_a_fault_installs_goes_with_its_profile_the_shared_ones_stay() -> None:
    """Kueue's CRDs come with ``kueue-gang`` and leave with it, so the no-gang-scheduler skip still
    sees no Kueue after a Kueue scenario; the CRDs created at start stay."""
    plain = backends.profile_objects("h100-eks-training", gpu_nodes=GPU, other_nodes=OTHER)
    kueue = backends.profile_objects("h100-eks-training", ["kueue-gang"], gpu_nodes=GPU, other_nodes=OTHER)
    shared = backends.shared_crd_names()
    assert "clusterqueues.kueue.x-k8s.io" not in shared and "queues.scheduling.run.ai" in shared
    kueue_crds = [
        ("CustomResourceDefinition", f"{p}.kueue.x-k8s.io")
        for p in ("clusterqueues", "localqueues", "resourceflavors", "workloads")
    ]
    delete, _ = backends.plan_convergence(kueue, plain, shared)
    assert [n for n in names(delete) if n[0] == "CustomResourceDefinition"] == kueue_crds
    delete, _ = backends.plan_convergence(kueue, plain)  # no shared set: every CRD stays
    assert [n for n in names(delete) if n[0] == "CustomResourceDefinition"] == []
    _, create = backends.plan_convergence(plain, kueue, shared)
    assert kueue_crds[0] in names(create)
