"""The cluster reads of the GPU allocation-mode probe (the decision is :mod:`aicr_pytest.core.allocmode`).

:func:`probe_allocation_mode` lists the Nodes (unless the caller already has them), discovers the
newest served ``resource.k8s.io`` version (v1 → v1beta2 → v1beta1), lists DeviceClasses and
ResourceSlices at that version and hands everything to :func:`aicr_pytest.core.allocmode.detect`.

A ``resource.k8s.io`` group the server does not serve at all means no DRA (``api_version`` is
``None``; nothing more is listed).  Any other error — a denied or failed discovery, a list that
fails while paging — propagates: the probe never turns an unanswered question into "no DRA".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aicr_pytest.core import allocmode
from aicr_pytest.kube.client import Cluster

JSON = dict[str, Any]


def probe_allocation_mode(cluster: Cluster, nodes: Sequence[JSON] | None = None) -> allocmode.AllocationMode:
    """How this cluster hands out whole GPUs; ``nodes`` (every Node, as listed) saves the node list."""
    if nodes is None:
        nodes = list(cluster.list("v1", "nodes"))
    served = [v for v in allocmode.DRA_VERSIONS if cluster.api_resources(f"resource.k8s.io/{v}")]
    api_version = allocmode.newest_served_version(served)
    classes: list[JSON] = []
    slices: list[JSON] = []
    if api_version is not None:
        classes = list(cluster.list(f"resource.k8s.io/{api_version}", "deviceclasses"))
        slices = list(cluster.list(f"resource.k8s.io/{api_version}", "resourceslices"))
    return allocmode.detect(nodes, api_version, classes, slices)


__all__ = ["probe_allocation_mode"]
