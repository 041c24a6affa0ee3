"""``cluster-autoscaling`` (CNCF ``cluster_autoscaling``): GPU-aware node
autoscaling -- Karpenter's behaviour when Karpenter is there, else EKS/GKE configuration evidence.

Decision tree (AICR's):

1. A Deployment labelled ``app.kubernetes.io/name=karpenter`` (else ``app=karpenter``) in any
   namespace; the first one wins.
2. None: the platform of the first node the API lists (``spec.providerID`` ``aws://`` → EKS,
   ``gce://`` → GKE); anything else -- or no node -- skips (``Karpenter not found and cluster
   platform not recognized (not EKS or GKE)``). A failing node list is ``other`` here (AICR skips).
3. Karpenter: it must be healthy (never masked by a fallback); a NodePool with an
   ``nvidia.com/gpu`` limit must exist; then, per GPU NodePool until one passes, a run-scoped
   namespace with a 1-replica GPU Deployment pinned to the pool and an HPA (max 4) on the external
   GPU metric; watch the HPA want more replicas (3 min), the pool gain nodes (3 min) and two test
   pods run (2 min).
4. EKS: GPU nodes with a managed node-group label (``eks.amazonaws.com/nodegroup``, else
   ``nodeGroup``) or a Cluster Autoscaler Deployment pass; neither fails.
5. GKE: GPU nodes pass (with the ``cluster-autoscaler-status`` ConfigMap: ``PASS``, else ``PASS
   (partial)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_pytest.conformance.autoscaling import (
    EXTERNAL_METRIC,
    hpa_manifest,
    wait_for_view,
    wait_scaling_intent,
)
from aicr_pytest.conformance.common import (
    ConformanceFailure,
    deployment_replicas,
    failure,
    first_image,
    inconclusive,
    list_objects,
    meta,
    spec,
    status,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.kube.errors import ApiError, NotFound

__all__ = [
    "CA_DEPLOYMENTS",
    "CA_NAMESPACES",
    "GKE_SCALE_REASONS",
    "KARPENTER_NODE_TIMEOUT_S",
    "KARPENTER_SELECTORS",
    "POD_SCHEDULE_TIMEOUT_S",
    "SKIP_UNSUPPORTED",
    "TEST_IMAGE",
    "gpu_nodepools",
    "gpu_workload_manifest",
    "platform_of",
    "run_cluster_autoscaling",
]

KARPENTER_SELECTORS: tuple[str, ...] = ("app.kubernetes.io/name=karpenter", "app=karpenter")
SKIP_UNSUPPORTED = "Karpenter not found and cluster platform not recognized (not EKS or GKE)"
GPU_NODE_SELECTOR = "nvidia.com/gpu.present=true"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
KARPENTER_NODE_TIMEOUT_S = 180.0
POD_SCHEDULE_TIMEOUT_S = 120.0
TEST_IMAGE = "ubuntu:22.04"
NAME_BASE = "cluster-auto-test"
CA_DEPLOYMENTS: tuple[str, ...] = ("cluster-autoscaler", "cluster-autoscaler-aws-cluster-autoscaler")
CA_NAMESPACES: tuple[str, ...] = ("kube-system", "cluster-autoscaler", "system")
GKE_SCALE_REASONS = frozenset({"NotTriggerScaleUp", "ScaledUpGroup", "ScaleDown", "TriggeredScaleUp"})

JSON = dict[str, Any]


def platform_of(node: Mapping[str, Any] | None) -> str | None:
    """``eks``, ``gke`` or ``None`` from a node's ``spec.providerID``."""
    provider = str(spec(node or {}).get("providerID") or "")
    if provider.startswith("aws://"):
        return "eks"
    if provider.startswith("gce://"):
        return "gke"
    return None


def gpu_nodepools(pools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the NodePools with an ``nvidia.com/gpu`` limit, in list order."""
    return [
        str(meta(p).get("name"))
        for p in pools
        if isinstance(spec(p).get("limits"), Mapping) and "nvidia.com/gpu" in spec(p)["limits"]
    ]


def gpu_workload_manifest(name: str, namespace: str, pool: str) -> JSON:
    """One-GPU pods pinned to ``pool`` (tolerating the GPU and kwok taints), AICR's shape."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Always",
                    "nodeSelector": {NODEPOOL_LABEL: pool},
                    "tolerations": [
                        {
                            "key": "nvidia.com/gpu",
                            "operator": "Equal",
                            "value": "present",
                            "effect": "NoSchedule",
                        },
                        {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"},
                    ],
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "gpu-workload",
                            "image": TEST_IMAGE,
                            "command": ["sleep", "120"],
                            "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}},
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                            },
                        }
                    ],
                },
            },
        },
    }


def _find_karpenter(ctx: ConformanceContext) -> JSON | None:
    for selector in KARPENTER_SELECTORS:
        found = list_objects(
            ctx.cluster, "apps/v1", "deployments", None, "failed to search for Karpenter deployment",
            label_selector=selector,
        )  # fmt: skip
        if found:
            return found[0]
    return None


def _first_node(ctx: ConformanceContext) -> JSON | None:
    try:
        for page in ctx.cluster.list_pages("v1", "nodes", page_size=1):
            items = page.get("items") or []
            return items[0] if items else None
    except ApiError as exc:
        raise inconclusive("INTERNAL", "failed to list nodes to detect the cluster platform", exc) from exc
    return None


def _gpu_nodes(ctx: ConformanceContext) -> list[JSON]:
    return list_objects(
        ctx.cluster, "v1", "nodes", None, "failed to list GPU nodes", label_selector=GPU_NODE_SELECTOR
    )


def _node_lines(nodes: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for n in nodes:
        labels = meta(n).get("labels") or {}
        gpus = (status(n).get("allocatable") or {}).get("nvidia.com/gpu", "0")
        lines.append(
            f"{meta(n).get('name')}: instance-type={labels.get('node.kubernetes.io/instance-type', '')} "
            f"gpus={gpus} providerID={spec(n).get('providerID') or ''}"
        )
    return "\n".join(lines) or "(none)"


# -- Karpenter --------------------------------------------------------------------------------------


def _karpenter(ctx: ConformanceContext, dep: JSON) -> None:
    available, expected = deployment_replicas(dep)
    ns, name = str(meta(dep).get("namespace") or ""), str(meta(dep).get("name") or "")
    ctx.record(
        "Karpenter Controller",
        f"Deployment: {ns}/{name}\nImage: {first_image(dep)}\nAvailable: {available}/{expected}",
    )
    if available < expected or expected == 0:
        raise failure(
            "INTERNAL", f"Karpenter deployment exists but is unhealthy: {available}/{expected} available"
        )
    try:
        selector = ",".join(
            f"{k}={v}" for k, v in ((spec(dep).get("selector") or {}).get("matchLabels") or {}).items()
        )
        pods = list(ctx.cluster.list("v1", "pods", ns, label_selector=selector or None))
        ctx.record(
            "Karpenter pods",
            "\n".join(f"{meta(p).get('name')}: {status(p).get('phase') or 'Pending'}" for p in pods)
            or "(none)",
        )
    except ApiError as exc:
        ctx.record("Karpenter pods", f"failed to list pods: {exc}")
    try:
        pools = list(ctx.cluster.list("karpenter.sh/v1", "nodepools"))
    except NotFound as exc:
        raise failure("NOT_FOUND", "failed to list NodePools", exc) from exc
    except ApiError as exc:
        raise inconclusive("NOT_FOUND", "failed to list NodePools", exc) from exc
    ctx.record(
        "GPU NodePools",
        "\n".join(f"{meta(p).get('name')}: limits={dict(spec(p).get('limits') or {})}" for p in pools)
        or "(none)",
    )
    gpu_pools = gpu_nodepools(pools)
    ctx.record("GPU NodePools (filtered)", "\n".join(gpu_pools) or "(none)")
    if not gpu_pools:
        raise failure("NOT_FOUND", "no NodePool with nvidia.com/gpu limits found")
    try:
        ctx.record("GPU nodes", _node_lines(_gpu_nodes(ctx)))
    except Inconclusive as exc:  # informational only
        ctx.record("GPU nodes", str(exc))
    last: BaseException | None = None
    for index, pool in enumerate(gpu_pools):
        try:
            _karpenter_behaviour(ctx, pool, index)
            return
        except (ConformanceFailure, Inconclusive) as exc:
            ctx.emit(f"NodePool {pool}: {exc}")
            last = exc
    assert last is not None
    raise last


@dataclass(frozen=True)
class _Behaviour:
    desired: int
    current: int
    baseline: int
    nodes: int
    running: int


def _karpenter_behaviour(ctx: ConformanceContext, pool: str, index: int) -> None:
    run = ctx.run
    try:
        ns = run.create_namespace_for_run(NAME_BASE if index == 0 else f"{NAME_BASE}-{index + 1}")
    except ApiError as exc:
        raise inconclusive("INTERNAL", "failed to create cluster autoscaling test namespace", exc) from exc
    try:
        name = ns
        pool_selector = f"{NODEPOOL_LABEL}={pool}"
        baseline = len(
            list_objects(
                ctx.cluster,
                "v1",
                "nodes",
                None,
                "failed to list NodePool nodes",
                label_selector=pool_selector,
            )
        )
        ctx.record(
            "Apply test manifest",
            f"namespace/{ns} created\ndeployment.apps/{name} created (1x nvidia.com/gpu, nodeSelector "
            f"{pool_selector})\nhorizontalpodautoscaler.autoscaling/{name} created (external metric "
            f"{EXTERNAL_METRIC}, AverageValue 10, min 1, max 4)",
        )
        try:
            run.create(gpu_workload_manifest(name, ns, pool))
            run.create(hpa_manifest(name, ns, max_replicas=4, scale_down_window=None))
        except ApiError as exc:
            raise inconclusive("INTERNAL", "failed to create cluster autoscaling test workload", exc) from exc
        desired, current = wait_scaling_intent(ctx, ns, name)
        nodes = _wait_nodes(ctx, pool_selector, baseline)
        running = _wait_pods(ctx, ns)
        result = _Behaviour(desired, current, baseline, nodes, running)
        ctx.record(
            "Cluster Autoscaling Behavioral Test",
            f"NodePool: {pool}\nHPA desired replicas: {result.desired}\n"
            f"HPA current replicas: {result.current}\n"
            f"NodePool nodes: {result.baseline} -> {result.nodes}\nRunning test pods: {result.running}\n"
            "Result: PASS",
        )
    finally:
        try:
            ctx.cluster.delete("v1", "Namespace", ns, propagation="Background", missing_ok=True)
            ctx.record("Delete test namespace", f"namespace/{ns} deleted")
        except ApiError as exc:
            ctx.record("Delete test namespace", f"namespace/{ns}: delete failed: {exc}")


def _wait_nodes(ctx: ConformanceContext, selector: str, baseline: int) -> int:
    def check(view: dict[str, JSON]) -> int | None:
        return len(view) if len(view) > baseline else None

    def describe(view: dict[str, JSON]) -> str:
        return f"{len(view)} node(s) with {selector} (baseline {baseline})"

    return wait_for_view(
        ctx, "v1", "nodes", None, check, describe, timeout=KARPENTER_NODE_TIMEOUT_S,
        message="Karpenter did not provision GPU nodes within timeout", label_selector=selector,
    )  # fmt: skip


def _wait_pods(ctx: ConformanceContext, ns: str) -> int:
    def running(view: dict[str, JSON]) -> int:
        return sum(1 for p in view.values() if status(p).get("phase") in ("Running", "Succeeded"))

    def check(view: dict[str, JSON]) -> int | None:
        return running(view) if len(view) >= 2 and running(view) >= 2 else None

    def describe(view: dict[str, JSON]) -> str:
        return f"{running(view)}/{len(view)} test pods Running or Succeeded"

    return wait_for_view(
        ctx, "v1", "pods", ns, check, describe, timeout=POD_SCHEDULE_TIMEOUT_S,
        message="test pods not scheduled within timeout — Karpenter nodes may not be ready",
    )  # fmt: skip


# -- EKS / GKE -------------------------------------------------------------------------------------


def _cluster_autoscaler(ctx: ConformanceContext) -> str | None:
    """``<ns>/<name>`` of an available Cluster Autoscaler Deployment, if any (best effort)."""
    for ns in CA_NAMESPACES:
        for name in CA_DEPLOYMENTS:
            try:
                dep = ctx.cluster.get("apps/v1", "Deployment", name, ns)
            except ApiError:
                continue
            if deployment_replicas(dep)[0] >= 1:
                return f"{ns}/{name}"
    return None


def _eks(ctx: ConformanceContext) -> None:
    nodes = _gpu_nodes(ctx)
    if not nodes:
        raise failure("NOT_FOUND", "no GPU nodes found in EKS cluster")
    labels = meta(nodes[0]).get("labels") or {}
    nodegroup = str(labels.get("eks.amazonaws.com/nodegroup") or labels.get("nodeGroup") or "")
    region = str(labels.get("topology.kubernetes.io/region") or "")
    ctx.record("GPU Nodes", _node_lines(nodes))
    ctx.record(
        "EKS Cluster Details",
        f"Node group: {nodegroup or '(none)'}\nRegion: {region or '(unknown)'}\n"
        f"Instance type: {labels.get('node.kubernetes.io/instance-type', '')}\nGPU nodes: {len(nodes)}",
    )
    autoscaler = _cluster_autoscaler(ctx)
    if autoscaler:
        ctx.record("Cluster Autoscaler", f"Deployment {autoscaler} available")
    if not nodegroup and not autoscaler:
        raise failure(
            "NOT_FOUND",
            "EKS GPU nodes found but no node group label or Cluster Autoscaler detected — cannot verify "
            "autoscaling capability",
        )
    if nodegroup:
        result = (
            f'PASS — EKS cluster with {len(nodes)} GPU nodes in node group "{nodegroup}". ASG-backed node '
            "group provides autoscaling capability."
        )
    else:
        result = (
            f"PASS — EKS cluster with {len(nodes)} GPU nodes; Cluster Autoscaler {autoscaler} is available."
        )
    ctx.record("EKS Cluster Autoscaling Result", result)


def _gke(ctx: ConformanceContext) -> None:
    nodes = _gpu_nodes(ctx)
    if not nodes:
        raise failure("NOT_FOUND", "no GPU nodes found in GKE cluster")
    provider = str(spec(nodes[0]).get("providerID") or "").removeprefix("gce://")
    parts = provider.split("/")
    project, zone = [*parts, "", ""][:2]
    ctx.record("GPU Nodes", _node_lines(nodes))
    ctx.record("GKE Cluster Details", f"Project: {project}\nZone: {zone}\nGPU nodes: {len(nodes)}")
    configmap: str | None = None
    for ns in CA_NAMESPACES:
        try:
            data = ctx.cluster.read_configmap(ns, "cluster-autoscaler-status")
        except ApiError:
            continue
        configmap = f"{ns}/cluster-autoscaler-status"
        ctx.record("Cluster Autoscaler Status", str(data.get("status") or "")[:2000])
        break
    disabled = [
        str(meta(n).get("name"))
        for n in nodes
        if (meta(n).get("annotations") or {}).get("cluster-autoscaler.kubernetes.io/scale-down-disabled")
    ]
    if disabled:
        ctx.record("Scale-down disabled nodes", "\n".join(disabled))
    try:
        events = [e for e in ctx.cluster.list("v1", "events") if e.get("reason") in GKE_SCALE_REASONS]
        ctx.record(
            "Autoscaler events",
            "\n".join(f"{e.get('reason')}: {e.get('message') or ''}" for e in events[-10:]) or "(none)",
        )
    except ApiError as exc:
        ctx.record("Autoscaler events", f"failed to list events: {exc}")
    verdict = "PASS" if configmap else "PASS (partial)"
    ctx.record(
        "GKE Cluster Autoscaling Result",
        f"{verdict} — GKE cluster with {len(nodes)} GPU nodes"
        + (
            f"; autoscaler status in {configmap}."
            if configmap
            else "; no cluster-autoscaler-status ConfigMap."
        ),
    )


def run_cluster_autoscaling(ctx: ConformanceContext) -> None:
    """The check (module docstring)."""
    karpenter = _find_karpenter(ctx)
    if karpenter is not None:
        _karpenter(ctx, karpenter)
        return
    platform = platform_of(_first_node(ctx))
    if platform == "eks":
        _eks(ctx)
    elif platform == "gke":
        _gke(ctx)
    else:
        raise CheckSkip(SKIP_UNSUPPORTED)
