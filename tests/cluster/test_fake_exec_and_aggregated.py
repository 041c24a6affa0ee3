"""The fake API server's stand-ins for what sits behind a real one, through the real client code:
``pods/exec`` over WebSocket (:mod:`aicr_pytest.kube.podexec`), aggregated APIs, and the service
proxy with query strings and unretried reads (:mod:`aicr_pytest.kube.rawhttp`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from aicr_pytest.kube import AccessDenied, Invalid, NotFound, connect
from aicr_pytest.kube.podexec import exec_in_pod
from aicr_pytest.kube.rawhttp import apiserver_status, send_once, service_proxy_path
from aicr_pytest.kube.transport import Target
from aicr_pytest.testing import FakeClusterFactory
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.server import ExecOutcome


def running_pod(
    fc: FakeCluster, name: str = "login-0", containers: Sequence[str] = ("login", "sidecar")
) -> None:
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "n", "containers": [{"name": c, "image": "x"} for c in containers]},
            "status": {"phase": "Running"},
        }
    )


def test_exec_runs_the_players_command(aicr_fake_cluster: FakeCluster) -> None:
    calls: list[tuple[str, list[str]]] = []

    def handler(container: str, command: Sequence[str]) -> ExecOutcome:
        calls.append((container, list(command)))
        if command[0] == "fail":
            return ExecOutcome("partial\n", "boom\n", 3)
        if command[0] == "broken":
            return ExecOutcome(exit_code=None, error="container runtime is down")
        return ExecOutcome("x" * 100_000, "warn\n", 0)

    running_pod(aicr_fake_cluster)
    aicr_fake_cluster.server.exec_handlers[("default", "login-0")] = handler
    cluster = connect(str(aicr_fake_cluster.kubeconfig_path), enforce_declared=True)
    ok = exec_in_pod(cluster, "default", "login-0", "login", ["srun", "--time=0:03", "hostname"])
    assert (ok.stdout, ok.stderr, ok.exit_code, ok.error) == ("x" * 100_000, "warn\n", 0, None) and ok.ok
    failed = exec_in_pod(cluster, "default", "login-0", "sidecar", ["fail"])
    assert (failed.stdout, failed.stderr, failed.exit_code, failed.error) == ("partial\n", "boom\n", 3, None)
    broken = exec_in_pod(cluster, "default", "login-0", "login", ["broken"])
    assert broken.exit_code is None and broken.error == "container runtime is down"
    assert calls == [
        ("login", ["srun", "--time=0:03", "hostname"]),
        ("sidecar", ["fail"]),
        ("login", ["broken"]),
    ]
    assert aicr_fake_cluster.request_count("GET", r"/pods/login-0/exec$") == 3


def test_exec_errors_before_the_upgrade(aicr_fake_cluster: FakeCluster) -> None:
    running_pod(aicr_fake_cluster)
    cluster = connect(str(aicr_fake_cluster.kubeconfig_path))
    with pytest.raises(NotFound):
        exec_in_pod(cluster, "default", "nope", "login", ["true"])
    with pytest.raises(Invalid, match="container nope is not valid for pod login-0"):
        exec_in_pod(cluster, "default", "login-0", "nope", ["true"])
    no_player = exec_in_pod(cluster, "default", "login-0", "login", ["true"])
    assert (
        no_player.exit_code is None
        and no_player.error == "exec is not simulated for pod default/login-0: true: not found"
    )
    aicr_fake_cluster.faults.deny(path=r"/exec$")
    with pytest.raises(AccessDenied):
        exec_in_pod(cluster, "default", "login-0", "login", ["true"])


def test_aggregated_api_is_discovered_and_served(aicr_fake_cluster: FakeCluster) -> None:
    def adapter(method: str, path: str, query: dict[str, str]) -> tuple[int, object]:
        if path == "":
            return 200, {
                "kind": "APIResourceList",
                "groupVersion": "custom.metrics.k8s.io/v1beta1",
                "resources": [],
            }
        return 200, {"path": path, "query": query}

    aicr_fake_cluster.server.aggregated[("custom.metrics.k8s.io", "v1beta1")] = adapter
    cluster = connect(str(aicr_fake_cluster.kubeconfig_path))
    groups = cluster.request("GET", "/apis", Target("get", "", "/apis")).json()["groups"]
    version = {"groupVersion": "custom.metrics.k8s.io/v1beta1", "version": "v1beta1"}
    assert {"name": "custom.metrics.k8s.io", "versions": [version], "preferredVersion": version} in groups
    path = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/gpu_utilization"
    raw = send_once(
        cluster,
        "GET",
        path,
        Target("get", "custom.metrics.k8s.io", "pods/gpu_utilization"),
        query=[("labelSelector", "a=b")],
    )
    assert raw.status == 200
    assert json.loads(raw.body) == {
        "path": "/namespaces/ns/pods/*/gpu_utilization",
        "query": {"labelSelector": "a=b"},
    }
    missing = send_once(cluster, "GET", "/apis/external.metrics.k8s.io/v1beta1", Target("get", "", "/apis/*"))
    assert missing.status == 404 and apiserver_status(missing) is not None


def test_service_proxy_passes_the_query_and_statuses_through(
    aicr_fake_cluster_factory: FakeClusterFactory,
) -> None:
    fc = aicr_fake_cluster_factory()
    fc.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}})
    fc.add({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "prom", "namespace": "monitoring"},
            "spec": {"ports": [{"port": 9090}]}})  # fmt: skip
    seen: list[str] = []

    def prom(method: str, path: str, body: bytes) -> tuple[int, str]:
        seen.append(path)
        return (404, "404 page not found\n") if "missing" in path else (200, "x" * 2048)

    cluster = connect(str(fc.kubeconfig_path))
    target = Target("get", "", "services/proxy", "monitoring", "prom:9090")
    path = service_proxy_path("monitoring", "prom", 9090, "/api/v1/query")
    unplayed = send_once(cluster, "GET", path, target)  # a Service nothing answers behind
    assert unplayed.status == 503 and (apiserver_status(unplayed) or {}).get("message") == (
        'no endpoints available for service "prom"'
    )
    fc.server.proxy_handlers[("monitoring", "prom")] = prom
    big = send_once(cluster, "GET", path, target, query=[("query", "DCGM_FI_DEV_GPU_UTIL")], max_bytes=1024)
    assert big.status == 200 and big.oversize and len(big.body) == 1024
    assert seen == ["/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL"]
    answer = send_once(cluster, "GET", service_proxy_path("monitoring", "prom", 9090, "/missing"), target)
    assert (answer.status, answer.text(), apiserver_status(answer)) == (404, "404 page not found\n", None)
    absent = send_once(cluster, "GET", service_proxy_path("monitoring", "nope", 9090, "/"), target)
    assert absent.status == 404 and apiserver_status(absent) is not None
    assert cluster.request_count == 4  # one request each: never retried
