"""``gpu-sharing`` (CNCF SHOULD ``gpu_sharing``): a GPU can be shared by workloads that need less.

The requirement (cncf/k8s-ai-conformance, ``KubernetesAIConformance-1.36.yaml``, accelerators):
for accelerators that support static sharing, provide at least one sharing strategy; fractional
resources from hardware partitioning should be schedulable resources. What the cluster shows, on
its GPU nodes and in its DRA devices (:func:`sharing_evidence`, pure):

* MIG, mixed strategy -- allocatable ``nvidia.com/mig-<profile>`` extended resources;
* MIG, single strategy -- GFD's ``nvidia.com/mig.strategy=single`` with a MIG product name
  (``…-MIG-1g.10gb``) and allocatable ``nvidia.com/gpu``;
* time-slicing or MPS -- GFD's ``nvidia.com/gpu.sharing-strategy`` (``time-slicing``/``mps``) or
  ``nvidia.com/gpu.replicas`` above 1, with allocatable ``nvidia.com/gpu`` (or the renamed
  ``nvidia.com/gpu.shared``) on the node;
* DRA partitions -- ResourceSlice devices of a partition type (attribute ``type`` ``mig``) or that
  consume a partitionable device's shared counters (preferred: listed first).

No GPU node: skipped. Nothing shareable: failed, naming what was looked for. GFD's defaults
(``mig.strategy=single`` on a GPU that is not partitioned, ``sharing-strategy=none``,
``replicas=1``) are no evidence of sharing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aicr_pytest.conformance.common import JSON, CheckSkip
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.inventory import (
    GPU_RESOURCE,
    DraDevice,
    allocatable,
    node_labels,
    node_name,
    positive_count,
    recorded_gpu_nodes,
    require_found,
)

MIG_RESOURCE_PREFIX: Final = "nvidia.com/mig-"
SHARED_RESOURCE: Final = "nvidia.com/gpu.shared"
STRATEGY_LABEL: Final = "nvidia.com/mig.strategy"
PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
SHARING_LABEL: Final = "nvidia.com/gpu.sharing-strategy"
REPLICAS_LABEL: Final = "nvidia.com/gpu.replicas"
SOFTWARE_STRATEGIES: Final = ("time-slicing", "mps")
PARTITION_TYPES: Final = ("mig",)

SKIP_NO_GPU_NODES: Final = "no GPU nodes: nothing to share"
LOOKED_FOR: Final = (
    "nvidia.com/mig-* resources, nvidia.com/mig.strategy=single with a MIG product, "
    "nvidia.com/gpu.sharing-strategy time-slicing/mps or nvidia.com/gpu.replicas > 1, "
    "DRA devices of type mig or consuming shared counters"
)
MSG_NOTHING_SHARED: Final = "no GPU sharing exposed on {count} GPU node(s) (looked for: {looked})"


def _node_lines(node: JSON) -> list[str]:
    name, labels, alloc = node_name(node), node_labels(node), allocatable(node)
    gpus = positive_count(alloc.get(GPU_RESOURCE, ""))
    lines = [
        f"{name}: MIG (mixed) {key}={qty}"
        for key, qty in sorted(alloc.items())
        if key.startswith(MIG_RESOURCE_PREFIX) and positive_count(qty) > 0
    ]
    product = labels.get(PRODUCT_LABEL, "")
    if labels.get(STRATEGY_LABEL) == "single" and "-MIG-" in product and gpus > 0:
        lines.append(f"{name}: MIG (single) {PRODUCT_LABEL}={product}, {GPU_RESOURCE}={gpus}")
    strategy = labels.get(SHARING_LABEL, "")
    replicas = positive_count(labels.get(REPLICAS_LABEL, ""))
    shared = positive_count(alloc.get(SHARED_RESOURCE, ""))
    if (strategy in SOFTWARE_STRATEGIES or replicas > 1) and (gpus > 0 or shared > 0):
        resource = f"{SHARED_RESOURCE}={shared}" if shared > 0 else f"{GPU_RESOURCE}={gpus}"
        lines.append(
            f"{name}: {strategy or 'time-slicing'} {REPLICAS_LABEL}={labels.get(REPLICAS_LABEL, '(unset)')}, "
            f"{resource}"
        )
    return lines


def dra_partition_lines(devices: Sequence[DraDevice]) -> list[str]:
    """The DRA devices that are partitions (module docstring), one line each."""
    lines: list[str] = []
    for d in devices:
        kind = d.attributes.get("type", "")
        if kind in PARTITION_TYPES or d.partition:
            how = f"type={kind}" if kind in PARTITION_TYPES else "consumes shared counters"
            profile = d.attributes.get("profile")
            lines.append(f"DRA {d.ref}: {how}" + (f", profile={profile}" if profile else ""))
    return lines


def sharing_evidence(gpu_nodes: Sequence[JSON], devices: Sequence[DraDevice]) -> list[str]:
    """What the cluster exposes for sharing: DRA partitions first, then per node (pure)."""
    return [*dra_partition_lines(devices), *(line for n in gpu_nodes for line in _node_lines(n))]


def run_gpu_sharing(ctx: ConformanceContext) -> None:
    inventory, nodes = recorded_gpu_nodes(ctx)
    if not nodes:
        raise CheckSkip(SKIP_NO_GPU_NODES)
    require_found(
        ctx,
        "GPU sharing exposed",
        sharing_evidence(nodes, inventory.devices),
        LOOKED_FOR,
        "kubectl get nodes -o json; kubectl get resourceslices -o yaml",
        MSG_NOTHING_SHARED.format(count=len(nodes), looked=LOOKED_FOR),
    )


__all__ = [
    "LOOKED_FOR",
    "MSG_NOTHING_SHARED",
    "SKIP_NO_GPU_NODES",
    "dra_partition_lines",
    "run_gpu_sharing",
    "sharing_evidence",
]
