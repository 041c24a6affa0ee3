"""What the CNCF SHOULD checks read of the cluster: its nodes and the devices DRA drivers publish.

:func:`read_inventory` lists the nodes and, where ``resource.k8s.io`` is served, every
ResourceSlice (a failed read is ``other``, never an empty cluster). The rest are pure functions over
plain API objects: a node's labels and allocatable quantities, the devices of a ResourceSlice
(``spec.devices[]`` of v1/v1beta2, ``spec.devices[].basic`` of v1beta1) with their attributes as
text, and which nodes are GPU nodes (GFD's ``nvidia.com/gpu.present``, an allocatable
``nvidia.com/gpu``, or a ``gpu.nvidia.com`` ResourceSlice on the node).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aicr_pytest.conformance.common import JSON, failure, list_objects, meta, spec, status
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.dra import served_dra_version

GPU_PRESENT_LABEL: Final = "nvidia.com/gpu.present"
GPU_RESOURCE: Final = "nvidia.com/gpu"
GPU_DRA_DRIVER: Final = "gpu.nvidia.com"
MSG_LIST_NODES: Final = "failed to list nodes"
MSG_LIST_SLICES: Final = "failed to list DRA ResourceSlices"
GPU_NODES_LABEL: Final = "GPU nodes"


@dataclass(frozen=True)
class DraDevice:
    """One device of a ResourceSlice: its driver, node (``""`` for a network-attached pool), name,
    attributes as text (``{"string": "mig"}`` -> ``"mig"``) and whether it draws on shared counters
    (a partition of a partitionable device)."""

    driver: str
    node: str
    name: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    partition: bool = False

    @property
    def ref(self) -> str:
        return f"{self.driver}/{self.node or '(no node)'}/{self.name}"


@dataclass(frozen=True)
class Inventory:
    """The nodes, the served DRA version (``None``: not served) and every published device."""

    nodes: tuple[JSON, ...]
    dra_version: str | None = None
    devices: tuple[DraDevice, ...] = ()

    def gpu_nodes(self) -> list[JSON]:
        return gpu_nodes(self.nodes, self.devices)


def node_name(node: Mapping[str, Any]) -> str:
    return str(meta(node).get("name") or "")


def node_labels(node: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (meta(node).get("labels") or {}).items()}


def allocatable(node: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (status(node).get("allocatable") or {}).items()}


def node_info(node: Mapping[str, Any], key: str) -> str:
    """``status.nodeInfo.<key>``, stripped (``""`` when absent)."""
    return str((status(node).get("nodeInfo") or {}).get(key) or "").strip()


def positive_count(quantity: str) -> int:
    """A whole-number quantity (``"8"``) as an int; anything else (``"500m"``, ``"x"``) is 0."""
    text = quantity.strip()
    return int(text) if text.isdigit() else 0


def attribute_text(value: Any) -> str | None:
    """A DRA attribute value (``{"string"|"version"|"int"|"bool": v}``) as text; ``None`` if unreadable."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return None
    kind, raw = next(iter(value.items()))
    if kind not in ("string", "version", "int", "bool") or raw is None:
        return None
    if kind == "bool":
        return "true" if raw is True else "false" if raw is False else None
    return str(raw)


def slice_devices(slices: Iterable[Mapping[str, Any]]) -> list[DraDevice]:
    """Every device of ``slices`` (see the module docstring), in slice order."""
    devices: list[DraDevice] = []
    for item in slices:
        body = spec(item)
        driver, node = str(body.get("driver") or ""), str(body.get("nodeName") or "")
        for device in body.get("devices") or []:
            if not isinstance(device, Mapping):
                continue
            nested = device.get("basic")
            basic: Mapping[str, Any] = nested if isinstance(nested, Mapping) else device
            found = basic.get("attributes")
            raw: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            attributes = {str(k): t for k, v in raw.items() if (t := attribute_text(v)) is not None}
            partition = bool(basic.get("consumesCounters"))
            devices.append(DraDevice(driver, node, str(device.get("name") or ""), attributes, partition))
    return devices


def gpu_nodes(nodes: Sequence[JSON], devices: Sequence[DraDevice] = ()) -> list[JSON]:
    """The GPU nodes among ``nodes`` (module docstring), in the given order."""
    dra = {d.node for d in devices if d.driver == GPU_DRA_DRIVER and d.node}
    return [
        n
        for n in nodes
        if node_labels(n).get(GPU_PRESENT_LABEL) == "true"
        or positive_count(allocatable(n).get(GPU_RESOURCE, "")) > 0
        or node_name(n) in dra
    ]


def read_inventory(ctx: ConformanceContext) -> Inventory:
    """The nodes and, where DRA is served, every ResourceSlice's devices (read errors: ``other``)."""
    nodes = list_objects(ctx.cluster, "v1", "Node", None, MSG_LIST_NODES)
    version, _ = served_dra_version(ctx.cluster)
    if version is None:
        return Inventory(tuple(nodes))
    slices = list_objects(ctx.cluster, f"resource.k8s.io/{version}", "ResourceSlice", None, MSG_LIST_SLICES)
    return Inventory(tuple(nodes), version, tuple(slice_devices(slices)))


def recorded_gpu_nodes(ctx: ConformanceContext) -> tuple[Inventory, list[JSON]]:
    """:func:`read_inventory` and its GPU nodes, recorded as the ``GPU nodes`` artifact."""
    inventory = read_inventory(ctx)
    nodes = inventory.gpu_nodes()
    names = [node_name(n) for n in nodes] or ["(none)"]
    ctx.record(GPU_NODES_LABEL, names, "kubectl get nodes -l nvidia.com/gpu.present=true")
    return inventory, nodes


def require_found(
    ctx: ConformanceContext, label: str, found: Sequence[str], looked: str, equivalent: str, message: str
) -> None:
    """Record what was ``found`` (or what was looked for), and fail ``[NOT_FOUND] message`` on nothing."""
    ctx.record(label, list(found) or [f"(none; looked for: {looked})"], equivalent)
    if not found:
        raise failure("NOT_FOUND", message)


__all__ = [
    "GPU_DRA_DRIVER",
    "GPU_NODES_LABEL",
    "GPU_PRESENT_LABEL",
    "GPU_RESOURCE",
    "DraDevice",
    "Inventory",
    "allocatable",
    "attribute_text",
    "gpu_nodes",
    "node_info",
    "node_labels",
    "node_name",
    "positive_count",
    "read_inventory",
    "recorded_gpu_nodes",
    "require_found",
    "slice_devices",
]
