"""RBAC bookkeeping: which (verb, group, resource) the facade issues, and what ``deploy/rbac.yaml`` grants.

Every request the :class:`~aicr_pytest.kube.client.Cluster` sends is classified as a
:class:`Permission` (the Kubernetes authorizer's view of it: verb, API group, resource with
``/subresource``) and recorded. :data:`REQUIRED_PERMISSIONS` is the declared registry of everything
the facade and the checks may use, each with the reason; ``deploy/rbac.yaml`` must grant exactly
that set, and ``tests/unit/test_rbac_manifest.py`` holds both sides to it. ``aicr-pytest snapshot``
needs far less: :data:`SNAPSHOT_CLUSTER_PERMISSIONS` and :data:`SNAPSHOT_NAMESPACED_PERMISSIONS` (a
subset of the registry), which ``deploy/rbac-snapshot.yaml`` grants exactly. A cluster built with
``enforce_declared=True`` (the facade tests do this) raises :class:`UndeclaredPermission` the
moment code issues a request outside the registry, so a new verb cannot slip in unnoticed.

Non-resource URLs (``/version``, discovery) are recorded with ``group=""`` and the URL pattern as
``resource`` (a leading ``/`` tells them apart).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aicr_pytest.core.errors import CheckFailed


@dataclass(frozen=True, order=True)
class Permission:
    """One authorizer attribute set: ``verb`` on ``resource`` (``plural[/sub]``) in API ``group``."""

    verb: str
    group: str
    resource: str

    @property
    def is_non_resource_url(self) -> bool:
        return self.resource.startswith("/")

    def __str__(self) -> str:
        if self.is_non_resource_url:
            return f"{self.verb} {self.resource}"
        return f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")


class UndeclaredPermission(CheckFailed):
    """Code issued a request that :data:`REQUIRED_PERMISSIONS` (and so ``deploy/rbac.yaml``) lacks."""


class PermissionRecorder:
    """Thread-safe set of every :class:`Permission` a cluster used."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[Permission] = set()

    def record(self, permission: Permission) -> None:
        with self._lock:
            self._seen.add(permission)

    @property
    def seen(self) -> frozenset[Permission]:
        with self._lock:
            return frozenset(self._seen)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


def _p(verbs: str, group: str, resources: str) -> tuple[Permission, ...]:
    return tuple(Permission(v, group, r) for v in verbs.split(",") for r in resources.split(","))


_READ = "get,list,watch"
_RBAC_GROUP = "rbac.authorization.k8s.io"

#: What the facade and checks may use, with why. ``deploy/rbac.yaml`` grants exactly this set.
#: Add a row (and the rule in rbac.yaml) when a check needs something new.
PERMISSION_REASONS: Mapping[str, tuple[Permission, ...]] = {
    "server version and discovery (Cluster.server_version, api_resources, has_resource)": (
        _p("get", "", "/version,/api,/api/*,/apis,/apis/*")
    ),
    "node inventory, GPU discovery and occupancy": _p(_READ, "", "nodes"),
    "namespace lifecycle (RunScope.ensure_namespace and its lease, create_namespace_for_run, cleanup)": _p(
        "get,list,watch,create,delete,patch", "", "namespaces"
    ),
    "workload pods: operator health, nvidia-smi, occupancy, waits and cleanup": _p(
        "get,list,watch,create,delete", "", "pods"
    ),
    "container logs (read_log, follow_log, job_newest_pod_log)": _p("get", "", "pods/log"),
    "events for diagnostics (FailedScheduling, image pull errors)": _p("list,watch", "", "events"),
    "ConfigMaps: recipe/snapshot sources (cm://) and run-scoped data": _p(
        "get,list,watch,create,delete,patch", "", "configmaps"
    ),
    "run-scoped Services and ServiceAccounts for workloads": _p(
        "get,list,watch,create,delete", "", "services,serviceaccounts"
    ),
    "expected-resources and operator health reads": _p(
        _READ, "apps", "deployments,daemonsets,statefulsets,replicasets"
    ),
    "validation Jobs (create, watch to completion, delete)": _p(
        "get,list,watch,create,delete", "batch", "jobs"
    ),
    "storage inventory (expected-resources, inference PVCs)": _p(_READ, "storage.k8s.io", "storageclasses"),
    "DRA inventory (conformance dra-support)": _p(_READ, "resource.k8s.io", "deviceclasses,resourceslices"),
    "RuntimeClass inventory (workload-sandboxing)": _p(_READ, "node.k8s.io", "runtimeclasses"),
    "DRA claims created by conformance workloads": _p(
        "get,list,watch,create,delete", "resource.k8s.io", "resourceclaims,resourceclaimtemplates"
    ),
    "CRD discovery (which operators are installed)": _p(
        _READ, "apiextensions.k8s.io", "customresourcedefinitions"
    ),
    "NCCL benchmark: run-scoped Kubeflow Trainer TrainingRuntime + TrainJob": _p(
        "get,list,watch,create,delete", "trainer.kubeflow.org", "trainjobs,trainingruntimes"
    ),
    "NCCL -nvls, dra-support's IMEX subtest: run-scoped ComputeDomain (made into a claim template)": _p(
        "get,list,watch,create,delete", "resource.nvidia.com", "computedomains"
    ),
    "gang-scheduling with Kueue: the run-scoped ResourceFlavor, ClusterQueue and LocalQueue": _p(
        "get,list,watch,create,delete", "kueue.x-k8s.io", "resourceflavors,clusterqueues,localqueues"
    ),
    "gang-scheduling with Kueue: the Workload Kueue creates for each gang Job": _p(
        _READ, "kueue.x-k8s.io", "workloads"
    ),
    "NCCL on GKE: GPU NIC networks for the multi-NIC worker annotation": _p(
        _READ, "networking.gke.io", "networks"
    ),
    "CRE checks: the run-scoped NVCRE Certification": _p(
        "get,list,watch,create,delete", "nvcre.nvidia.com", "certifications"
    ),
    "CRE checks: the measurements NVCRE records for the run's Certification": _p(
        "list", "nvcre.nvidia.com", "bandwidthmeasurements,goodputmeasurements"
    ),
    "inference-perf: model-cache PVC in the per-run namespace": _p(
        "get,list,watch,create,delete", "", "persistentvolumeclaims"
    ),
    "inference-perf: HF token Secret in the per-run namespace (write-only: never read back)": _p(
        "create", "", "secrets"
    ),
    "inference-perf: endpoint readiness by a chat completion through the API server's service proxy": _p(
        "create", "", "services/proxy"
    ),
    "inference-perf: the run's DynamoGraphDeployment": _p(
        "get,list,watch,create,delete", "nvidia.com", "dynamographdeployments"
    ),
    "inference-perf: the run's KAI Queue (cluster-scoped)": _p(
        "get,list,watch,create,delete", "scheduling.run.ai", "queues"
    ),
    "inference-perf gateway-epp: the run's HTTPRoute": _p(
        "get,list,watch,create,delete", "gateway.networking.k8s.io", "httproutes"
    ),
    "conformance gang-scheduling: the run's KAI PodGroup": _p(
        "get,list,watch,create,delete", "scheduling.run.ai", "podgroups"
    ),
    "conformance robust-controller: the operator's validating webhook and its endpoints": (
        _p("list", "admissionregistration.k8s.io", "validatingwebhookconfigurations")
        + _p("list", "discovery.k8s.io", "endpointslices")
    ),
    "conformance robust-controller (Dynamo): DynamoComponentDeployment inventory": _p(
        "list", "nvidia.com", "dynamocomponentdeployments"
    ),
    "conformance secure-accelerator-access: what an anonymous client may do (SubjectAccessReview)": _p(
        "create", "authorization.k8s.io", "subjectaccessreviews"
    ),
    "conformance accelerator-metrics: the Prometheus scrape configuration of the DCGM exporter": _p(
        "list", "monitoring.coreos.com", "servicemonitors,podmonitors"
    ),
    "conformance robust-controller: the controller's leader-election Lease": _p(
        "list", "coordination.k8s.io", "leases"
    ),
    "conformance robust-controller (Kubeflow Trainer): ClusterTrainingRuntimes it reconciles": _p(
        "list", "trainer.kubeflow.org", "clustertrainingruntimes"
    ),
    "conformance gpu-operator-health, secure-accelerator-access: ClusterPolicy state": _p(
        "get", "nvidia.com", "clusterpolicies"
    ),
    "conformance accelerator-metrics, ai-service-metrics: DCGM exporter / Prometheus through the "
    "API server's service proxy (GET)": _p("get", "", "services/proxy"),
    "gpu-health, gpu-inventory: each GPU node's DCGM exporter pod through the API server's pod proxy "
    "(GET)": _p("get", "", "pods/proxy"),
    "conformance pod-autoscaling: pod-scoped GPU custom metrics (prometheus-adapter)": _p(
        "get", "custom.metrics.k8s.io", "pods/gpu_utilization,pods/gpu_memory_used,pods/gpu_power_usage"
    ),
    "conformance pod-/cluster-autoscaling: the external GPU metric the HPAs scale on": _p(
        "list", "external.metrics.k8s.io", "dcgm_gpu_power_usage"
    ),
    "conformance pod-/cluster-autoscaling: the run's scale-target Deployment and HPA": (
        _p("create", "apps", "deployments")
        + _p("get,list,watch,create,patch", "autoscaling", "horizontalpodautoscalers")
    ),
    "conformance cluster-autoscaling: Karpenter NodePools": _p("list", "karpenter.sh", "nodepools"),
    "conformance inference-gateway: GatewayClass and Gateway": _p(
        "get", "gateway.networking.k8s.io", "gatewayclasses,gateways"
    ),
    "conformance slinky-slurm-*: Slinky LoginSets/NodeSets and commands in the login pod": (
        _p("list", "slinky.slurm.net", "loginsets,nodesets") + _p("get,create", "", "pods/exec")
    ),
    "run-scoped RBAC for in-cluster workloads (no cluster-admin binding)": _p(
        "get,list,watch,create,delete", _RBAC_GROUP, "roles,rolebindings"
    ),
    "snapshot K8s.policy: the GPU Operator's ClusterPolicy (aicr_pytest.snapshot.cluster)": _p(
        "list", "nvidia.com", "clusterpolicies"
    ),
}

REQUIRED_PERMISSIONS: frozenset[Permission] = frozenset(
    p for perms in PERMISSION_REASONS.values() for p in perms
)

#: What ``aicr-pytest snapshot`` needs cluster-wide (``deploy/rbac-snapshot.yaml``, ClusterRole
#: ``aicr-pytest-snapshot``): the API-side measurements and the agent namespace's existence check.
SNAPSHOT_CLUSTER_PERMISSION_REASONS: Mapping[str, tuple[Permission, ...]] = {
    "K8s.server and discovery of ClusterPolicy kinds": _p("get", "", "/version,/apis,/apis/*"),
    "K8s.image: every pod's images (paginated, all namespaces)": _p("list", "", "pods"),
    "NodeTopology and K8s.node: every node, and the agent's node": _p("get,list", "", "nodes"),
    "K8s.policy: the GPU Operator's ClusterPolicy": _p("list", "nvidia.com", "clusterpolicies"),
    "the agent namespace must exist (RunScope.ensure_namespace reads it; never created)": _p(
        "get", "", "namespaces"
    ),
}
#: What it needs in the agent's namespace and in a ``cm://`` output's namespace (ClusterRole
#: ``aicr-pytest-snapshot-agent``, bound there with a RoleBinding).
SNAPSHOT_NAMESPACED_PERMISSION_REASONS: Mapping[str, tuple[Permission, ...]] = {
    "the agent's run-scoped Job: create, wait for deletion, delete": _p(
        "create,delete,list,watch", "batch", "jobs"
    ),
    "the collector script's run-scoped ConfigMap; --output cm:// (server-side apply)": _p(
        "create,delete,list,watch,patch", "", "configmaps"
    ),
    "the agent's pod: watched until it ends": _p("list,watch", "", "pods"),
    "the agent's output (read_log)": _p("get", "", "pods/log"),
}
SNAPSHOT_CLUSTER_PERMISSIONS: frozenset[Permission] = frozenset(
    p for perms in SNAPSHOT_CLUSTER_PERMISSION_REASONS.values() for p in perms
)
SNAPSHOT_NAMESPACED_PERMISSIONS: frozenset[Permission] = frozenset(
    p for perms in SNAPSHOT_NAMESPACED_PERMISSION_REASONS.values() for p in perms
)
SNAPSHOT_PERMISSIONS: frozenset[Permission] = SNAPSHOT_CLUSTER_PERMISSIONS | SNAPSHOT_NAMESPACED_PERMISSIONS


#: What ``--label-bad-nodes`` / ``--taint-bad-nodes`` need on top of :data:`REQUIRED_PERMISSIONS`
#: (``deploy/rbac-node-marks.yaml``, ClusterRole ``aicr-pytest-node-marks``): opt-in, so apart, and
#: ``aicr-pytest schedule`` renders it only when those flags are scheduled.
NODE_MARK_PERMISSION_REASONS: Mapping[str, tuple[Permission, ...]] = {
    "--label-bad-nodes / --taint-bad-nodes: the validation label, reason annotation and NoSchedule taint "
    "on the nodes the node-health checks judged (aicr_pytest.health.nodemarks_run)": _p("patch", "", "nodes"),
}
NODE_MARK_PERMISSIONS: frozenset[Permission] = frozenset(
    p for perms in NODE_MARK_PERMISSION_REASONS.values() for p in perms
)
#: everything a request may need: what ``enforce_declared`` holds requests to
DECLARED_PERMISSIONS: frozenset[Permission] = REQUIRED_PERMISSIONS | NODE_MARK_PERMISSIONS


def rule_permissions(rule: Mapping[str, Any]) -> set[Permission]:
    """Expand one RBAC ``PolicyRule`` into concrete permissions (wildcards are kept verbatim)."""
    verbs = [str(v) for v in rule.get("verbs") or []]
    out: set[Permission] = set()
    for url in rule.get("nonResourceURLs") or []:
        pattern = "/*" if str(url) == "*" else str(url)  # keep URL patterns distinct from resources
        out.update(Permission(v, "", pattern) for v in verbs)
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            out.update(Permission(v, str(group), str(resource)) for v in verbs)
    return out


def granted_permissions(documents: Iterable[Mapping[str, Any]]) -> set[Permission]:
    """Every permission granted by the ClusterRole/Role documents among ``documents``."""
    out: set[Permission] = set()
    for doc in documents:
        if doc and doc.get("kind") in ("ClusterRole", "Role"):
            for rule in doc.get("rules") or []:
                out |= rule_permissions(rule)
    return out


def is_granted(permission: Permission, granted: Iterable[Permission]) -> bool:
    """Whether ``granted`` covers ``permission`` (honouring ``*`` and ``/prefix/*`` URL rules)."""
    for g in granted:
        if g.verb not in ("*", permission.verb):
            continue
        if permission.is_non_resource_url:
            if not g.is_non_resource_url:
                continue
            if g.resource == permission.resource or (
                g.resource.endswith("*") and permission.resource.startswith(g.resource[:-1])
            ):
                return True
            continue
        if g.is_non_resource_url:
            continue
        if g.group in ("*", permission.group) and g.resource in ("*", permission.resource):
            return True
    return False


def non_resource_pattern(path: str) -> str:
    """The registry pattern for a non-resource URL: ``/apis/apps/v1`` → ``/apis/*``."""
    for root in ("/api", "/apis"):
        if path == root:
            return root
        if path.startswith(root + "/"):
            return root + "/*"
    return path


__all__ = [
    "DECLARED_PERMISSIONS",
    "NODE_MARK_PERMISSIONS",
    "NODE_MARK_PERMISSION_REASONS",
    "PERMISSION_REASONS",
    "REQUIRED_PERMISSIONS",
    "SNAPSHOT_CLUSTER_PERMISSIONS",
    "SNAPSHOT_CLUSTER_PERMISSION_REASONS",
    "SNAPSHOT_NAMESPACED_PERMISSIONS",
    "SNAPSHOT_NAMESPACED_PERMISSION_REASONS",
    "SNAPSHOT_PERMISSIONS",
    "Permission",
    "PermissionRecorder",
    "UndeclaredPermission",
    "granted_permissions",
    "is_granted",
    "non_resource_pattern",
    "rule_permissions",
]
