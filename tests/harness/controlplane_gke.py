"""GKE's a3-megagpu-8g node metadata on the real control plane, and the ``gvnic-displaces-gpu-nic`` fault.

kwok's nodes are the harness's, shared by the session, so a GKE profile's node metadata is played
(and undone) by patching them, as :mod:`tests.harness.controlplane_rdma` does for its fault: when the
seeded profile's GPU pool carries GKE's accelerator label, the profile's GPU nodes on the control
plane get the a3 labels (:data:`~aicr_pytest.testing.profiles.gke.A3_NODE_LABELS`) and GKE
multi-networking's ``nic-info`` and ``north-interfaces`` annotations
(:func:`~aicr_pytest.testing.profiles.gke.a3_node_annotations`, the fake's own values); under
``gvnic-displaces-gpu-nic`` the last of them in name order is the displaced one (the fake displaces
its last GPU node). Every node this module touched carries :data:`MARK` until it is restored, so the
undo is stateless. The profile's Network objects and their CRDs are seeded like any profile object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from aicr_pytest.testing.profiles.gke import A3_NODE_LABELS, a3_node_annotations

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

FAULT = "gvnic-displaces-gpu-nic"
MARK = "aicr.test/gke-a3"
ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
MERGE = "application/strategic-merge-patch+json"


def _patch(cp: ControlPlane, node: str, meta: Mapping[str, object]) -> None:
    cp.request("PATCH", f"/api/v1/nodes/{quote(node)}", {"metadata": meta}, content_type=MERGE)


def is_gke_profile(profile: str) -> bool:
    """Whether ``profile``'s GPU nodes are GKE a3 nodes (its first GPU pool has the accelerator label)."""
    from aicr_pytest.testing.profiles import resolve_profile

    pools = resolve_profile(profile).gpu_pools()
    return bool(pools) and ACCELERATOR_LABEL in pools[0].labels


def apply_profile(cp: ControlPlane, profile: str, faults: Sequence[str], gpu_nodes: Sequence[str]) -> None:
    """Undo any earlier play, then dress ``gpu_nodes`` as a3 nodes when ``profile`` is a GKE one."""
    for node in cp.get("/api/v1/nodes")["items"]:
        meta = node.get("metadata") or {}
        if MARK in (meta.get("annotations") or {}):
            restore = {
                "labels": dict.fromkeys(A3_NODE_LABELS),
                "annotations": {**dict.fromkeys(a3_node_annotations()), MARK: None},
            }
            _patch(cp, str(meta["name"]), restore)
    if not gpu_nodes or not is_gke_profile(profile):
        return
    nodes = sorted(gpu_nodes)
    for name in nodes:
        displaced = FAULT in faults and name == nodes[-1]
        _patch(
            cp,
            name,
            {"labels": dict(A3_NODE_LABELS), "annotations": {**a3_node_annotations(displaced), MARK: "1"}},
        )
