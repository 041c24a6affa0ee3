"""The cluster reads of the node-health checks (the verdicts are the domain modules of this package).

:func:`targeted_gpu_nodes` chooses the GPU nodes a check looks at; :func:`run_gpu_inventory` is
``gpu-inventory`` end to end: list the Nodes (and, when the allocation policy may count DRA
devices, the ``resource.k8s.io`` ResourceSlices), pick the targeted GPU nodes and hand them to
:func:`aicr_pytest.health.inventory.inventory`.

Where each count comes from: **allocatable** from the Node's ``status.allocatable`` or the
ResourceSlices (per the allocation policy); **advertised** from the GPU Feature Discovery label
``nvidia.com/gpu.count``; **driver** from what NVML reports through the node's own DCGM exporter:
the distinct GPUs among the ``DCGM_FI_DEV_*`` series of one scrape of that node's exporter pod
through the API server's pod proxy, all nodes in parallel
(:func:`aicr_pytest.health.scraping.driver_reports`).  A node with no running exporter pod
falls back to GFD's label and its evidence line says so; an exporter that refuses, sends text
that is not Prometheus exposition or lists no GPU makes that node inconclusive.  The check stays
read-only and starts no workload.  A GPU the driver still sees but the device plugin or the DRA
driver does not hand out is what it catches (``7 of 8 GPUs allocatable``), and a GPU the driver
lost while GFD and the device plugin still count it (``the driver reports 7 GPUs but 8 are
allocatable and the node advertises 8``).

A failed list is :class:`~aicr_pytest.core.errors.Inconclusive` (``other``), never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from aicr_pytest.core import allocmode
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.health import inventory as inv
from aicr_pytest.health import scraping
from aicr_pytest.health.common import MSG_LIST_FAILED
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.proof import simulated_gpu_nodes

JSON = dict[str, Any]
Emit = Callable[[str], None]

#: policies under which a node's GPUs may be counted from ResourceSlices
_SLICE_POLICIES: Final = (allocmode.POLICY_UNSPECIFIED, allocmode.POLICY_DRA_CLAIM)


def _labels(node: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = (node.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def is_gpu_node(node: Mapping[str, Any], dra_devices: Mapping[str, int]) -> bool:
    """A node GFD labels with a GPU count, or with ``nvidia.com/gpu`` allocatable, or DRA GPU devices."""
    name = allocmode.node_name(node)
    return (
        inv.LABEL_COUNT in _labels(node)
        or inv.GPU_RESOURCE in ((node.get("status") or {}).get("allocatable") or {})
        or dra_devices.get(name, 0) > 0
    )


def targeted_gpu_nodes(
    nodes: Sequence[Mapping[str, Any]],
    dra_devices: Mapping[str, int],
    node_selector: Mapping[str, str] | None,
) -> list[Mapping[str, Any]]:
    """The GPU nodes a run targets (``--node-selector`` narrows them), in name order."""
    chosen = [
        n
        for n in nodes
        if is_gpu_node(n, dra_devices)
        and all(str(_labels(n).get(k)) == v for k, v in (node_selector or {}).items())
    ]
    return sorted(chosen, key=allocmode.node_name)


def _list(cluster: Cluster, what: str, api_version: str, plural: str) -> list[JSON]:
    try:
        return list(cluster.list(api_version, plural))
    except ApiError as err:
        raise Inconclusive(MSG_LIST_FAILED.format(what=what, err=err)) from err


def resource_slices(cluster: Cluster) -> list[JSON]:
    """Every ResourceSlice at the newest served ``resource.k8s.io`` version (none: DRA not served)."""
    try:
        served = [v for v in allocmode.DRA_VERSIONS if cluster.api_resources(f"resource.k8s.io/{v}")]
    except ApiError as err:
        raise Inconclusive(MSG_LIST_FAILED.format(what="the resource.k8s.io API", err=err)) from err
    version = allocmode.newest_served_version(served)
    if version is None:
        return []
    return _list(cluster, "ResourceSlices", f"resource.k8s.io/{version}", "resourceslices")


def gpu_nodes(cluster: Cluster, policy: str | None) -> tuple[list[JSON], dict[str, int], list[JSON]]:
    """Every Node, the usable ``gpu.nvidia.com`` devices per node and the ResourceSlices they come
    from (listed only when the policy may count DRA devices)."""
    nodes = _list(cluster, "Nodes", "v1", "nodes")
    slices = resource_slices(cluster) if allocmode.normalize_policy(policy) in _SLICE_POLICIES else []
    return nodes, allocmode.validated_driver_nodes(nodes, slices, inv.GPU_DRIVER), slices


def read_inventory(
    cluster: Cluster,
    *,
    policy: str | None,
    node_selector: Mapping[str, str] | None,
    allow_fake_nodes: bool = False,
) -> inv.InventoryReport:
    """List what ``gpu-inventory`` needs and build its report (the verdict is the caller's). A node
    whose GPUs are KWOK's or a simulator's is inconclusive, unless ``allow_fake_nodes``."""
    mode = allocmode.normalize_policy(policy)
    nodes, dra, slices = gpu_nodes(cluster, mode)
    targeted = targeted_gpu_nodes(nodes, dra, node_selector)
    return inv.inventory(
        targeted,
        policy=mode,
        resource_slices=slices,
        driver_reports=scraping.driver_reports(cluster, targeted),
        inconclusive=list(simulated_gpu_nodes(cluster, targeted, allow_fake_nodes=allow_fake_nodes).values()),
    )


def _driver_text(node: inv.NodeInventory) -> str:
    return f"driver {node.driver} ({node.driver_source})" if node.driver_source else "no driver report"


def run_gpu_inventory(
    cluster: Cluster,
    *,
    policy: str | None,
    node_selector: Mapping[str, str] | None,
    emit: Emit,
    extra: dict[str, Any],
    allow_fake_nodes: bool = False,
) -> str:
    """``gpu-inventory``: one evidence line per node, the report in ``extra``; the verdict (also the
    last evidence line when it passes)."""
    report = read_inventory(
        cluster, policy=policy, node_selector=node_selector, allow_fake_nodes=allow_fake_nodes
    )
    extra.update(report.extra)
    for node in report.nodes:
        emit(
            f"{node.node}: {node.allocatable} allocatable ({node.source}), "
            f"{node.advertised} advertised, {_driver_text(node)}, product {node.product}"
        )
    message = inv.check_inventory(report)
    emit(message)
    return message


__all__ = [
    "MSG_LIST_FAILED",
    "gpu_nodes",
    "is_gpu_node",
    "read_inventory",
    "resource_slices",
    "run_gpu_inventory",
    "targeted_gpu_nodes",
]
