"""deploy/rbac.yaml grants exactly what the code uses (RBAC authorizer attributes: verb, API group,
resource[/subresource]; "Using RBAC Authorization", "Referring to resources").

Three sides are held together:
* the manifest grants exactly :data:`REQUIRED_PERMISSIONS` (no wildcards, nothing extra);
* every ``Target(...)`` the facade builds from literals is declared (static scan);
* running the facade's scenarios with ``enforce_declared=True`` records only granted permissions,
  and what the scenarios do not exercise is the documented allowance below (needed by checks).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml
from _kube_stub import Call, Reply, StepClock, event, make_cluster

from aicr_pytest.kube import RunScope, gpu_occupancy, job_newest_pod_log, read_log, wait_for_job_complete
from aicr_pytest.kube.rbac import (
    PERMISSION_REASONS,
    REQUIRED_PERMISSIONS,
    Permission,
    UndeclaredPermission,
    granted_permissions,
    is_granted,
    non_resource_pattern,
)

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "rbac.yaml"
KUBE_SRC = REPO / "aicr_pytest" / "kube"


def P(verbs: str, group: str, resources: str) -> set[Permission]:
    return {Permission(v, group, r) for v in verbs.split(",") for r in resources.split(",")}


# Granted for checks but not exercised by the facade scenarios in this file. Each line: who needs it.
ALLOWANCE: set[Permission] = (
    P("get,list,watch", "", "nodes") - P("list", "", "nodes")  # GPU node discovery reads/watches nodes
    | P("get", "", "/apis,/api,/api/*")  # full discovery walk (kubectl-style)
    | P("list,watch", "", "events")  # diagnostics: FailedScheduling / image pull events
    | P("watch,patch", "", "configmaps")  # cm:// sources, CTRF written to cm://
    | P("get,list,watch,create,delete", "", "services,serviceaccounts")  # inference / NCCL workloads
    | P("get,list,watch", "apps", "deployments,daemonsets,statefulsets,replicasets")  # operator health
    | P("get,list,watch", "storage.k8s.io", "storageclasses")  # expected-resources
    | P("get,list,watch", "resource.k8s.io", "deviceclasses,resourceslices")  # dra-support
    | P("get,list,watch", "node.k8s.io", "runtimeclasses")  # workload-sandboxing
    | P("get,list,watch,create,delete", "resource.k8s.io", "resourceclaims,resourceclaimtemplates")
    | P("get,list,watch", "apiextensions.k8s.io", "customresourcedefinitions")  # installed operators
    | P("get,list,watch,create,delete", "rbac.authorization.k8s.io", "roles,rolebindings")  # workload RBAC
    | P("watch,create,delete", "", "pods")  # nvidia-smi / conformance pods, created and removed by checks
    | P("get", "batch", "jobs")  # checks re-read a Job's status after the wait
    | P("watch", "", "namespaces")  # cleanup waiting for a terminating namespace with finalizers
    | P("get,list,watch,create,delete", "trainer.kubeflow.org", "trainjobs,trainingruntimes")  # NCCL
    | P("get,list,watch,create,delete", "resource.nvidia.com", "computedomains")  # -nvls, IMEX
    | P("get,list,watch", "networking.gke.io", "networks")  # NCCL on GKE
    | P(
        "get,list,watch,create,delete", "kueue.x-k8s.io", "resourceflavors,clusterqueues,localqueues"
    )  # Kueue gang
    | P("get,list,watch", "kueue.x-k8s.io", "workloads")  # gang-scheduling with Kueue
    | P("get,list,watch,create,delete", "nvcre.nvidia.com", "certifications")  # CRE checks
    | P("list", "nvcre.nvidia.com", "bandwidthmeasurements,goodputmeasurements")  # CRE checks
    | P("get,list,watch,create,delete", "", "persistentvolumeclaims")  # inference-perf model cache
    | P("create", "", "secrets,services/proxy")  # inference-perf HF token Secret, endpoint probe
    | P("get,list,watch,create,delete", "nvidia.com", "dynamographdeployments")  # inference-perf
    | P("get,list,watch,create,delete", "scheduling.run.ai", "queues")  # inference-perf KAI Queue
    | P("get,list,watch,create,delete", "gateway.networking.k8s.io", "httproutes")  # gateway-epp
    | P("list", "nvidia.com", "clusterpolicies")  # snapshot K8s.policy (validate without --snapshot)
    | P("get,list,watch,create,delete", "scheduling.run.ai", "podgroups")  # gang-scheduling PodGroup
    | P("list", "admissionregistration.k8s.io", "validatingwebhookconfigurations")  # robust-controller
    | P("list", "discovery.k8s.io", "endpointslices")  # robust-controller webhook endpoints
    | P("list", "nvidia.com", "dynamocomponentdeployments")  # robust-controller (Dynamo) inventory
    | P("list", "coordination.k8s.io", "leases")  # robust-controller leader-election Lease
    | P("list", "trainer.kubeflow.org", "clustertrainingruntimes")  # robust-controller reconcile inventory
    | P("list", "monitoring.coreos.com", "servicemonitors,podmonitors")  # accelerator-metrics scraping
    | P("create", "authorization.k8s.io", "subjectaccessreviews")  # secure-accelerator-access posture
    | P("get", "nvidia.com", "clusterpolicies")  # gpu-operator-health, secure-accelerator-access
    | P("get", "", "services/proxy")  # accelerator-/ai-service-metrics: DCGM exporter, Prometheus
    | P("get", "custom.metrics.k8s.io", "pods/gpu_utilization,pods/gpu_memory_used,pods/gpu_power_usage")
    | P("list", "external.metrics.k8s.io", "dcgm_gpu_power_usage")  # pod-/cluster-autoscaling
    | P("create", "apps", "deployments")  # pod-/cluster-autoscaling scale targets
    | P("get,list,watch,create,patch", "autoscaling", "horizontalpodautoscalers")  # their HPAs
    | P("list", "karpenter.sh", "nodepools")  # cluster-autoscaling
    | P("get", "gateway.networking.k8s.io", "gatewayclasses,gateways")  # inference-gateway
    | P("list", "slinky.slurm.net", "loginsets,nodesets")  # slinky-slurm-*
    | P("get,create", "", "pods/exec")  # slinky-slurm-*: scontrol/sinfo/srun in the login pod
    | P("get", "", "pods/proxy")  # gpu-health: each node's DCGM exporter pod
)


def manifest_docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def test_manifest_grants_exactly_the_declared_permissions() -> None:
    granted = granted_permissions(manifest_docs())
    assert not [p for p in granted if "*" in (p.verb, p.group, p.resource.rstrip("/*") or "*")], (
        "no wildcards"
    )
    missing = sorted(str(p) for p in REQUIRED_PERMISSIONS - granted)
    extra = sorted(str(p) for p in granted - REQUIRED_PERMISSIONS)
    assert not missing, f"declared but not granted by deploy/rbac.yaml: {missing}"
    assert not extra, f"granted by deploy/rbac.yaml but not declared in REQUIRED_PERMISSIONS: {extra}"


def test_manifest_never_reads_secrets_or_binds_cluster_admin() -> None:
    docs = manifest_docs()
    granted = granted_permissions(docs)
    # Secrets: create only (inference-perf's HF token); nothing can read, list or change one.
    assert {p.verb for p in granted if p.resource == "secrets"} <= {"create"}
    assert not any(p.resource in ("clusterroles", "clusterrolebindings") and p.verb != "get" for p in granted)
    for doc in docs:
        assert (doc.get("roleRef") or {}).get("name") != "cluster-admin"


def literal_targets() -> set[Permission]:
    """Every ``Target("verb", "group", "resource", ...)`` written with literals in the facade."""
    found: set[Permission] = set()
    for path in KUBE_SRC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Target":
                args = node.args[:3]
                if len(args) == 3 and all(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args
                ):
                    verb, group, resource = (a.value for a in args)  # type: ignore[attr-defined]
                    if resource.startswith("/"):
                        resource = non_resource_pattern(resource)
                    found.add(Permission(verb, group, resource))
    return found


def test_static_targets_are_declared() -> None:
    targets = literal_targets()
    assert Permission("get", "", "pods/log") in targets  # the scan sees the log helper
    undeclared = sorted(str(p) for p in targets - REQUIRED_PERMISSIONS)
    assert not undeclared, f"facade code uses undeclared permissions: {undeclared}"


class ScenarioServer:
    """A permissive stub answering whatever the facade scenario asks, plausibly."""

    def __init__(self) -> None:
        self.created: dict[str, dict[str, Any]] = {}

    def __call__(self, call: Call) -> Reply:
        path = call.path
        if path == "/version":
            return Reply(200, {"major": "1", "minor": "33", "gitVersion": "v1.33.1"})
        if path.startswith("/apis/") and path.count("/") == 3:
            return Reply(200, {"resources": []})
        if call.method == "POST":
            body = dict(call.body)
            self.created[path + "/" + body["metadata"]["name"]] = body
            return Reply(201, body)
        if call.method == "DELETE":
            return Reply(200, {"kind": "Status", "status": "Success"})
        if call.query.get("watch"):
            done = {
                "kind": "Job",
                "metadata": {"name": "j", "namespace": "ns", "resourceVersion": "3"},
                "status": {"conditions": [{"type": "Complete", "status": "True"}]},
            }
            return Reply(200, lines=[event("MODIFIED", done)])
        if path.endswith("/log"):
            return Reply(200, b"hello\n")
        if path.endswith("/namespaces/aicr-validation"):
            shared = self.created.get("/api/v1/namespaces/aicr-validation")
            if shared is None:
                return Reply(404, {"kind": "Status", "code": 404})
            if call.method == "PATCH":  # a lease released: the namespace as the server would return it
                shared = {**shared, "metadata": {**shared["metadata"], "annotations": {}}}
                self.created["/api/v1/namespaces/aicr-validation"] = shared
            return Reply(200, {**shared, "metadata": {**shared["metadata"], "resourceVersion": "7"}})
        if "/pods" in path and "labelSelector" in call.query and "job-name" in call.query["labelSelector"]:
            pod = {
                "metadata": {"name": "j-abc", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"containers": [{"name": "main"}]},
            }
            return Reply(200, {"metadata": {"resourceVersion": "2"}, "items": [pod]})
        if path.endswith("/pods/p"):
            return Reply(200, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]}})
        if call.method == "GET" and "watch" not in call.query and call.query.get("limit"):
            return Reply(200, {"metadata": {"resourceVersion": "2"}, "items": []})
        return Reply(200, {"metadata": {"name": path.rsplit("/", 1)[-1]}})


def run_facade_scenarios() -> set[Permission]:
    server = ScenarioServer()
    cluster, _, _ = make_cluster(server, enforce=True)
    clock = StepClock()
    cluster.server_version()
    cluster.has_resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
    gpu_occupancy(cluster, "nvidia.com/gpu.present=true")
    scope = RunScope(lambda: cluster, "a1b2c3d4", clock=clock)
    scope.ensure_namespace()
    scope.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {}})
    scope.create(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {}}}
    )
    scope.create_namespace_for_run("aicr-inference-perf")
    cluster.read_configmap("aicr-validation", "cm")
    wait_for_job_complete(cluster, "ns", "j", timeout=10, clock=clock)
    job_newest_pod_log(cluster, "ns", "j", "main")
    read_log(cluster, "ns", "p", None, tail_lines=10)
    scope.leftovers()
    scope.cleanup()
    return set(cluster.permissions.seen)


def test_facade_scenarios_use_only_granted_permissions_and_the_rest_is_documented() -> None:
    granted = granted_permissions(manifest_docs())
    used = run_facade_scenarios()
    denied = sorted(str(p) for p in used if not is_granted(p, granted))
    assert not denied, f"facade uses permissions deploy/rbac.yaml does not grant: {denied}"
    unused = granted - used
    undocumented = sorted(str(p) for p in unused - ALLOWANCE)
    assert not undocumented, f"granted but neither used nor in the documented ALLOWANCE: {undocumented}"
    stale = sorted(str(p) for p in ALLOWANCE & used)
    assert not stale, f"ALLOWANCE lists permissions the scenarios now exercise (remove them): {stale}"


def test_undeclared_request_fails_fast_when_enforced() -> None:
    cluster, api, _ = make_cluster(lambda c: Reply(200, {"items": [], "metadata": {}}), enforce=True)
    with pytest.raises(UndeclaredPermission, match="list secrets"):
        list(cluster.list("v1", "secrets", "kube-system"))
    assert api.calls == []  # refused before anything is sent
    assert not is_granted(Permission("list", "", "secrets"), granted_permissions(manifest_docs()))


def test_every_reason_is_non_empty() -> None:
    assert all(reason and perms for reason, perms in PERMISSION_REASONS.items())


def test_is_granted_wildcards() -> None:
    granted = {Permission("*", "*", "*"), Permission("get", "", "/apis/*")}
    assert is_granted(Permission("delete", "batch", "jobs"), granted)
    assert is_granted(Permission("get", "", "/apis/apps/v1"), granted)
    assert not is_granted(Permission("get", "", "/metrics"), granted)


def test_node_marks_manifest_grants_exactly_node_patch() -> None:
    """``deploy/rbac-node-marks.yaml`` (opt-in: --label-bad-nodes/--taint-bad-nodes) grants node patch
    and nothing else; the main role never grants it."""
    from aicr_pytest.kube.rbac import NODE_MARK_PERMISSIONS

    docs = [d for d in yaml.safe_load_all((REPO / "deploy" / "rbac-node-marks.yaml").read_text()) if d]
    assert granted_permissions(docs) == set(NODE_MARK_PERMISSIONS) == {Permission("patch", "", "nodes")}
    assert Permission("patch", "", "nodes") not in granted_permissions(manifest_docs())
