"""Per-node GPU occupancy: allocatable vs. requested by non-terminal pods.

A pod's effective request follows the Kubernetes resource model (the scheduler's
``AggregateContainerRequests``, KEP-753 for sidecars): app containers run together and add up;
regular init containers run one at a time before them, each alongside the restartable init
containers (sidecars, ``restartPolicy: Always``) started before it; sidecars keep running, so they
also add to the app containers' sum. The pod request is the larger of the two phases, plus
``spec.overhead`` (RuntimeClass overhead). For extended resources an unset request defaults to the
limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from aicr_pytest.kube.client import Cluster

GPU_RESOURCE = "nvidia.com/gpu"
_TERMINAL = ("Succeeded", "Failed")
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kMGTPE]|[KMGTPE]i)?$")
_FACTORS = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


class GpuOccupancy(NamedTuple):
    allocatable: int
    requested: int

    @property
    def free(self) -> int:
        return max(0, self.allocatable - self.requested)


def parse_count(value: object) -> int:
    """An integer resource quantity (``"8"``, ``8``, ``"1k"``); unparseable → 0."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    match = _QUANTITY.match(str(value).strip())
    if not match:
        return 0
    return int(float(match.group(1)) * _FACTORS[match.group(2)])


def _container_request(container: Mapping[str, Any], resource: str) -> int:
    res = container.get("resources") or {}
    requests = res.get("requests") or {}
    if resource in requests:
        return parse_count(requests[resource])
    return parse_count((res.get("limits") or {}).get(resource))


def pod_request(pod: Mapping[str, Any], resource: str = GPU_RESOURCE) -> int:
    """The pod's effective request of ``resource`` (see the module docstring)."""
    spec = pod.get("spec") or {}
    total = sum(_container_request(c, resource) for c in spec.get("containers") or [])
    sidecars = 0
    init_peak = 0
    for ic in spec.get("initContainers") or []:
        req = _container_request(ic, resource)
        if ic.get("restartPolicy") == "Always":
            sidecars += req
            total += req
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, req + sidecars)
    return max(total, init_peak) + parse_count((spec.get("overhead") or {}).get(resource))


def occupancy_from(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], resource: str = GPU_RESOURCE
) -> dict[str, GpuOccupancy]:
    """Pure core of :func:`gpu_occupancy` over already-listed nodes and pods."""
    allocatable: dict[str, int] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        allocatable[name] = parse_count(((node.get("status") or {}).get("allocatable") or {}).get(resource))
    requested = dict.fromkeys(allocatable, 0)
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name not in requested:
            continue
        if (pod.get("status") or {}).get("phase") in _TERMINAL:
            continue
        requested[node_name] += pod_request(pod, resource)
    return {name: GpuOccupancy(allocatable[name], requested[name]) for name in allocatable}


def gpu_occupancy(
    cluster: Cluster,
    node_label_selector: str | None = None,
    resource: str = GPU_RESOURCE,
    page_size: int = 500,
) -> dict[str, GpuOccupancy]:
    """``{node: (allocatable, requested)}`` for the selected nodes; pods listed paginated, all namespaces."""
    nodes = cluster.list("v1", "nodes", label_selector=node_label_selector, page_size=page_size)
    pods = cluster.list(
        "v1",
        "pods",
        None,
        field_selector="status.phase!=Succeeded,status.phase!=Failed",
        page_size=page_size,
    )
    node_list = list(nodes)
    return occupancy_from(node_list, pods, resource)


__all__ = ["GPU_RESOURCE", "GpuOccupancy", "gpu_occupancy", "occupancy_from", "parse_count", "pod_request"]
