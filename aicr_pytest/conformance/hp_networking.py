"""``high-performance-networking`` (CNCF SHOULD ``high_performance_networking``): RDMA-capable NICs
are exposed to pods as resources a workload can ask for.

The requirement (cncf/k8s-ai-conformance, ``KubernetesAIConformance-1.36.yaml``, networking): *if*
high-performance pod-to-pod communication is needed, specialized network resources are managed and
exposed so that their characteristics are discoverable, preferably through DRA. What the cluster
shows (:func:`nic_evidence`, pure):

* DRA (preferred, listed first) -- ResourceSlice devices of a NIC driver: a driver whose name has a
  part (between dots or dashes) starting with ``net``, ``rdma``, ``roce``, ``sriov`` or ``nic``, or
  ending in ``net`` (``roce.networking.k8s.aws``, ``dra.net``), or a device attribute that says RDMA
  (``rdma``/``rdmaCapable`` true, ``type`` ``nic``/``rdma``);
* extended resources on a GPU node -- ``rdma/*``, ``nvidia.com/hostdev``, ``nvidia.com/rdma*``,
  ``vpc.amazonaws.com/efa``, ``mellanox.com/*``, with a positive allocatable count.

Skipped when the cluster has fewer than two GPU nodes: pod-to-pod traffic between accelerators then
never leaves the node (NVLink/PCIe), so the requirement's condition ("if high performance
pod-to-pod communication is needed") does not arise. Nothing exposed on a multi-node GPU cluster:
failed, naming what was looked for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from aicr_pytest.conformance.common import JSON, CheckSkip
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.inventory import (
    DraDevice,
    allocatable,
    node_name,
    positive_count,
    recorded_gpu_nodes,
    require_found,
)

RESOURCE_PREFIXES: Final = (
    "rdma/",
    "nvidia.com/hostdev",
    "nvidia.com/rdma",
    "vpc.amazonaws.com/efa",
    "mellanox.com/",
)
#: a driver-name part (split on ``.``/``-``) that starts with one of these names a NIC driver
DRIVER_HINTS: Final = ("net", "rdma", "roce", "sriov", "nic")
RDMA_ATTRIBUTES: Final = ("rdma", "rdmaCapable")
NIC_TYPES: Final = ("nic", "rdma")
MIN_GPU_NODES: Final = 2

SKIP_SINGLE_NODE: Final = (
    "{count} GPU node(s): accelerator pod-to-pod traffic stays on the node, so high-performance "
    "networking between nodes is not needed"
)
LOOKED_FOR: Final = "DRA devices of a NIC driver or with an RDMA attribute, extended resources " + ", ".join(
    f"{p}*" if p.endswith("/") else p for p in RESOURCE_PREFIXES
)
MSG_NONE: Final = "no RDMA/high-performance NIC resources exposed on {count} GPU nodes (looked for: {looked})"


def is_nic_device(device: DraDevice) -> bool:
    """Whether a DRA device is a NIC (module docstring)."""
    parts = re.split(r"[.-]", device.driver)
    if any(p.startswith(DRIVER_HINTS) or p.endswith("net") for p in parts):
        return True
    if any(device.attributes.get(a) == "true" for a in RDMA_ATTRIBUTES):
        return True
    return device.attributes.get("type", "") in NIC_TYPES


def nic_evidence(gpu_nodes: Sequence[JSON], devices: Sequence[DraDevice]) -> list[str]:
    """DRA NIC devices (counted per driver and node), then NIC extended resources per GPU node."""
    counts: dict[tuple[str, str], int] = {}
    for d in devices:
        if is_nic_device(d):
            key = (d.driver, d.node or "(no node)")
            counts[key] = counts.get(key, 0) + 1
    lines = [f"DRA {driver} on {node}: {n} device(s)" for (driver, node), n in counts.items()]
    for node in gpu_nodes:
        lines += [
            f"{node_name(node)}: {key}={qty}"
            for key, qty in sorted(allocatable(node).items())
            if key.startswith(RESOURCE_PREFIXES) and positive_count(qty) > 0
        ]
    return lines


def run_high_performance_networking(ctx: ConformanceContext) -> None:
    inventory, nodes = recorded_gpu_nodes(ctx)
    if len(nodes) < MIN_GPU_NODES:
        raise CheckSkip(SKIP_SINGLE_NODE.format(count=len(nodes)))
    require_found(
        ctx,
        "High-performance NICs exposed",
        nic_evidence(nodes, inventory.devices),
        LOOKED_FOR,
        "kubectl get resourceslices; kubectl describe nodes | grep -A12 Allocatable",
        MSG_NONE.format(count=len(nodes), looked=LOOKED_FOR),
    )


__all__ = [
    "LOOKED_FOR",
    "MSG_NONE",
    "SKIP_SINGLE_NODE",
    "is_nic_device",
    "nic_evidence",
    "run_high_performance_networking",
]
