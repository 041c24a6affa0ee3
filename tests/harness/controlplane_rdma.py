"""The ``rdma-not-ready`` fault on the real control plane: the network operator's RDMA fabric on kwok's nodes.

kwok's nodes are the harness's, shared by the session, so the fault is played (and undone) by patching
them, as :func:`tests.harness.controlplane_health.apply_faults` does for ``gpu-missing``: the profile's
GPU nodes get the Mellanox NFD label and, all but the last in name order, the fabric's
``rdma/hca_shared_devices_a`` capacity and allocatable
(:func:`aicr_pytest.testing.profiles.faults.rdma_fabric_nodes`, the fake's own rule). Every node this
module touched carries :data:`MARK` until it is restored, so the undo is stateless.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from aicr_pytest.testing.profiles.faults import MELLANOX_LABEL, RDMA_FABRIC_RESOURCE, rdma_fabric_nodes

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

FAULT = "rdma-not-ready"
MARK = "aicr.test/rdma-fabric"
MERGE = "application/strategic-merge-patch+json"


def _patch(
    cp: ControlPlane, node: str, meta: Mapping[str, object], resource: str | None, *, clear: bool
) -> None:
    path = f"/api/v1/nodes/{quote(node)}"
    cp.request("PATCH", path, {"metadata": meta}, content_type=MERGE)
    if clear or resource is not None:
        value = None if clear else resource
        status = {"capacity": {RDMA_FABRIC_RESOURCE: value}, "allocatable": {RDMA_FABRIC_RESOURCE: value}}
        cp.request("PATCH", f"{path}/status", {"status": status}, content_type=MERGE)


def apply_faults(cp: ControlPlane, faults: Sequence[str], gpu_nodes: Sequence[str]) -> None:
    """Undo any earlier play, then play ``rdma-not-ready`` on ``gpu_nodes`` when it is asked for."""
    for node in cp.get("/api/v1/nodes")["items"]:
        meta = node.get("metadata") or {}
        if MARK in (meta.get("annotations") or {}):
            restore = {"labels": {MELLANOX_LABEL: None}, "annotations": {MARK: None}}
            _patch(cp, str(meta["name"]), restore, None, clear=True)
    if FAULT not in faults or not gpu_nodes:
        return
    nodes = sorted(gpu_nodes)
    for name, count in rdma_fabric_nodes(nodes, not_ready=nodes[-1]).items():
        play = {"labels": {MELLANOX_LABEL: "true"}, "annotations": {MARK: "1"}}
        _patch(cp, name, play, count, clear=False)
