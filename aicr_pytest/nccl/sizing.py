"""NCCL worker discovery, sizing and scheduling (section 2 of a run).

:func:`select_target_nodes`, :func:`size_workers` and :func:`worker_scheduling` take node dicts in
Kubernetes JSON shape and return a sized worker cohort; :func:`uniform_fabric_count`,
:func:`max_message_size` and :func:`gke_network_interfaces` decide the fabric plumbing from what
the cluster reported (the preflights' decisions live in :mod:`.nvreg`).

Deliberate difference from AICR: sizing uses a per-node GPU census: a target node with
fewer allocatable GPUs than the per-worker sizing fails fast, naming the node, instead of leaving a
worker Pending.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.nccl.variant import MSG_SKIP_TOO_FEW_NODES, NcclCheckFailure, VariantPlan, _dig

GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
RDMA_RESOURCE = "rdma/hca_shared_devices_a"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"

MAX_MESSAGE_SIZE = "16G"
#: Max message size when EKS has no EFA devices or AKS no RDMA pool (TCP fallback).
TCP_FALLBACK_MAX_MESSAGE_SIZE = "4G"
MIN_WORKERS = 2

# --- nodes and scheduling ---------------------------------------------------
MSG_NO_GPU_NODES = "no schedulable GPU nodes found"
MSG_SELECTOR_ZERO = "--node-selector {selector} matches zero of {count} GPU nodes"
MSG_NO_ACCELERATOR_MATCH = (
    'no schedulable GPU nodes match recipe accelerator "{accelerator}" (products seen: [{products}])'
)
MSG_NO_GPUS = "no GPUs found on nodes"
MSG_SHORT_NODES = (
    "GPU census: {nodes} {verb} fewer allocatable nvidia.com/gpu than the {gpus} per worker the benchmark is "
    "sized for — the worker there would stay Pending; repair the node or exclude it with --node-selector"
)
MSG_SERVICE_ANY_NEEDS_SELECTOR = (
    "self-managed clusters (service=any) require --node-selector to identify GPU nodes "
    "(e.g., --node-selector nvidia.com/gpu.present=true)"
)
MSG_GKE_MIXED_ACCELERATOR = (
    "GKE nodes have missing or mixed cloud.google.com/gke-accelerator labels — cannot derive a nodeSelector "
    "that matches the full WorkerCount cohort"
)
MSG_EKS_NO_INSTANCE_TYPE = "GPU node missing node.kubernetes.io/instance-type label"
MSG_FABRIC_NOT_UNIFORM = (
    "{resource} present on {present} of {total} target GPU nodes — cluster still converging or device plugin "
    "not fully rolled out; re-run once uniform"
)
MSG_FABRIC_COUNTS_DIFFER = (
    "{resource} counts differ across target GPU nodes ({counts}) — cluster still converging or device plugin "
    "not fully rolled out; re-run once uniform"
)
MSG_GKE_NICS = (
    "expected 8 GPU NIC networks, found {count} — cluster may not have multi-NIC networking configured"
)

Node = Mapping[str, Any]

#: GFD ``nvidia.com/gpu.product`` matchers: exact values or prefixes.
_PRODUCT_EXACT: dict[str, tuple[str, ...]] = {
    "gb200": ("NVIDIA-GB200",),
    "b200": ("NVIDIA-B200",),
    "l40": ("NVIDIA-L40", "NVIDIA-L40S"),
    "rtx-pro-6000": ("NVIDIA-RTX-PRO-6000",),
}
_PRODUCT_PREFIX: dict[str, str] = {"h100": "NVIDIA-H100-", "h200": "NVIDIA-H200-", "a100": "NVIDIA-A100-"}


def node_name(node: Node) -> str:
    return str(_dig(node, "metadata", "name") or "")


def node_labels(node: Node) -> dict[str, str]:
    labels = _dig(node, "metadata", "labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def allocatable_count(node: Node, resource: str) -> int:
    """Scalar allocatable of ``resource`` (non-integer quantities count as 0)."""
    alloc = _dig(node, "status", "allocatable")
    value = alloc.get(resource) if isinstance(alloc, dict) else None
    if value is None:
        return 0
    try:
        return max(int(str(value).strip()), 0)
    except ValueError:
        return 0


def product_matches(accelerator: str, product: str) -> bool | None:
    """Whether a GFD product belongs to ``accelerator``; ``None`` when no matcher exists."""
    acc = accelerator.strip().lower()
    if acc in _PRODUCT_EXACT:
        return product in _PRODUCT_EXACT[acc]
    if acc in _PRODUCT_PREFIX:
        return product.startswith(_PRODUCT_PREFIX[acc])
    return None


def _format_selector(selector: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def select_target_nodes(
    nodes: Iterable[Node],
    *,
    accelerator: str,
    service: str,
    node_selector: Mapping[str, str] | None = None,
) -> list[Node]:
    """The benchmark's worker nodes.

    ``accelerator`` is the recipe's own ``criteria.accelerator``; ``service`` the target (profile)
    service.  A non-empty ``node_selector`` (``--node-selector``, or a private runtime's own worker
    selector) *replaces* the accelerator and instance-type filters.
    """
    candidates = [
        n
        for n in nodes
        if not bool(_dig(n, "spec", "unschedulable")) and allocatable_count(n, GPU_RESOURCE) > 0
    ]
    if not candidates:
        raise NcclCheckFailure(MSG_NO_GPU_NODES)
    if node_selector:
        chosen = [n for n in candidates if all(node_labels(n).get(k) == v for k, v in node_selector.items())]
        if not chosen:
            raise NcclCheckFailure(
                MSG_SELECTOR_ZERO.format(selector=_format_selector(node_selector), count=len(candidates))
            )
        return chosen
    products = [node_labels(n).get(GPU_PRODUCT_LABEL) for n in candidates]
    if product_matches(accelerator, "") is not None and any(products):
        chosen = [
            n for n, p in zip(candidates, products, strict=True) if p and product_matches(accelerator, p)
        ]
        if not chosen:
            seen = " ".join(sorted({p for p in products if p}))
            raise NcclCheckFailure(MSG_NO_ACCELERATOR_MATCH.format(accelerator=accelerator, products=seen))
        candidates = chosen
    if service == "eks":
        first_type = node_labels(candidates[0]).get(INSTANCE_TYPE_LABEL)
        if first_type:
            candidates = [n for n in candidates if node_labels(n).get(INSTANCE_TYPE_LABEL) == first_type]
    return candidates


@dataclass(frozen=True)
class WorkerSizing:
    worker_count: int
    gpu_count_per_node: int
    node_names: tuple[str, ...]

    @property
    def gpu_count(self) -> int:
        return self.worker_count * self.gpu_count_per_node


def size_workers(targets: Sequence[Node]) -> WorkerSizing:
    """Worker count and GPUs per worker, with a per-node census.

    Fewer than two nodes skips; every node must offer the per-worker GPU count (the largest
    allocatable count among the targets), else the check fails naming the short nodes.
    """
    if len(targets) < MIN_WORKERS:
        raise CheckSkip(MSG_SKIP_TOO_FEW_NODES)
    counts = [(node_name(n), allocatable_count(n, GPU_RESOURCE)) for n in targets]
    per_node = max(c for _, c in counts)
    if per_node <= 0:
        raise NcclCheckFailure(MSG_NO_GPUS)
    short = [(name, c) for name, c in counts if c < per_node]
    if short:
        listed = ", ".join(f"{name} ({c} of {per_node})" for name, c in short)
        raise NcclCheckFailure(
            MSG_SHORT_NODES.format(nodes=listed, verb="has" if len(short) == 1 else "have", gpus=per_node)
        )
    return WorkerSizing(
        worker_count=len(targets), gpu_count_per_node=per_node, node_names=tuple(n for n, _ in counts)
    )


def uniform_fabric_count(targets: Sequence[Node], resource: str) -> int:
    """The per-node count of ``resource`` (EFA, RDMA pool) which must match on every target node.

    A uniform 0 is valid (TCP fallback: see :func:`max_message_size`).
    """
    counts = [allocatable_count(n, resource) for n in targets]
    if not counts or len(set(counts)) == 1:
        return counts[0] if counts else 0
    present = sum(1 for c in counts if c > 0)
    if present < len(counts):
        raise NcclCheckFailure(
            MSG_FABRIC_NOT_UNIFORM.format(resource=resource, present=present, total=len(counts))
        )
    detail = ", ".join(f"{node_name(n)}={c}" for n, c in zip(targets, counts, strict=True))
    raise NcclCheckFailure(MSG_FABRIC_COUNTS_DIFFER.format(resource=resource, counts=detail))


def max_message_size(plan: VariantPlan, fabric_count: int | None) -> str:
    """16G normally; 4G on EKS without EFA / AKS without the RDMA pool (TCP fallback)."""
    if plan.embedded and plan.target_service in ("eks", "aks") and plan.fabric == "efa" and fabric_count == 0:
        return TCP_FALLBACK_MAX_MESSAGE_SIZE
    return MAX_MESSAGE_SIZE


@dataclass(frozen=True)
class WorkerScheduling:
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]


_TOLERATE_ALL: list[dict[str, str]] = [{"operator": "Exists"}]


def platform_worker_scheduling(service: str, targets: Sequence[Node]) -> WorkerScheduling:
    """Default worker nodeSelector/tolerations for the target service."""
    if service == "eks":
        itype = node_labels(targets[0]).get(INSTANCE_TYPE_LABEL) if targets else None
        if not itype:
            raise NcclCheckFailure(MSG_EKS_NO_INSTANCE_TYPE)
        return WorkerScheduling({INSTANCE_TYPE_LABEL: itype}, list(_TOLERATE_ALL))
    if service == "gke":
        values = {node_labels(n).get(GKE_ACCELERATOR_LABEL) for n in targets}
        if len(values) != 1 or None in values or "" in values:
            raise NcclCheckFailure(MSG_GKE_MIXED_ACCELERATOR)
        (value,) = values
        assert value is not None
        return WorkerScheduling(
            {GKE_ACCELERATOR_LABEL: value},
            [
                {"operator": "Exists"},
                {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
            ],
        )
    if service in ("oke", "aks"):
        products = {node_labels(n).get(GPU_PRODUCT_LABEL) for n in targets}
        selector: dict[str, str] = {}
        if len(products) == 1:
            (product,) = products
            if product:
                selector = {GPU_PRODUCT_LABEL: product}
        return WorkerScheduling(selector, list(_TOLERATE_ALL))
    return WorkerScheduling({}, [])


def worker_scheduling(
    plan: VariantPlan,
    targets: Sequence[Node],
    *,
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Mapping[str, str]] | None,
) -> WorkerScheduling:
    """Effective worker scheduling: flags win over platform defaults (tolerations: ``None`` = no
    flag given).  A private runtime gets only what the flags say; ``service=any`` needs a selector."""
    explicit_sel = dict(node_selector) if node_selector else {}
    explicit_tol = [dict(t) for t in tolerations] if tolerations is not None else None
    if not plan.embedded:
        return WorkerScheduling(explicit_sel, explicit_tol or [])
    if plan.requires_node_selector and not explicit_sel:
        raise NcclCheckFailure(MSG_SERVICE_ANY_NEEDS_SELECTOR)
    default = platform_worker_scheduling(plan.target_service, targets)
    return WorkerScheduling(
        explicit_sel or default.node_selector,
        explicit_tol if explicit_tol is not None else default.tolerations,
    )


def gke_network_interfaces(network_names: Iterable[str]) -> str:
    """``networking.gke.io/interfaces`` JSON from the cluster's GKE Network names (sorted ``gpu-nic``)."""
    nics = sorted(n for n in network_names if "gpu-nic" in n)
    if len(nics) < 8:
        raise NcclCheckFailure(MSG_GKE_NICS.format(count=len(nics)))
    ifaces = [{"interfaceName": "eth0", "network": "default"}]
    ifaces += [{"interfaceName": f"eth{i + 1}", "network": n} for i, n in enumerate(nics)]
    return json.dumps(ifaces, separators=(",", ":"))
