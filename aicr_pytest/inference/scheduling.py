"""inference-perf before anything is created: guard C, the GPU node choice and the cache's storage.

Cluster reads only (the CRD, nodes, the allocation mode, GPU occupancy, StorageClasses), each feeding
a pure decision of :mod:`aicr_pytest.inference.nodes`, :mod:`~aicr_pytest.inference.render` or
:mod:`aicr_pytest.core.allocmode`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from aicr_pytest.core import allocmode
from aicr_pytest.inference.knobs import DGD_CRD, InferenceKnobs
from aicr_pytest.inference.nodes import (
    GPUOccupancy,
    NodeChoice,
    count_used_gpus_by_node,
    discover_candidate_nodes,
    select_worker_node,
    wiring_evidence,
)
from aicr_pytest.inference.render import require_cache_storage
from aicr_pytest.kube.allocprobe import probe_allocation_mode
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError

JSON = dict[str, Any]
Say = Callable[[str], None]
CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"


def dgd_crd_lookup(cluster: Cluster) -> bool | BaseException:
    """``True`` when the DynamoGraphDeployment CRD exists, else the lookup error (for guard C)."""
    try:
        cluster.get(CRD_API_VERSION, "CustomResourceDefinition", DGD_CRD)
    except ApiError as exc:
        return exc
    return True


def probe_allocation(cluster: Cluster) -> tuple[list[JSON], allocmode.AllocationMode]:
    """List nodes, then probe the allocation mode (:func:`~aicr_pytest.kube.allocprobe.probe_allocation_mode`:
    DeviceClasses and slices at the newest served ``resource.k8s.io`` version)."""
    nodes = list(cluster.list("v1", "nodes"))
    return nodes, probe_allocation_mode(cluster, nodes)


def occupancy(cluster: Cluster, mode: allocmode.AllocationMode) -> GPUOccupancy:
    """GPU use per node: every non-terminal pod (paginated, all namespaces) plus DRA claims.

    Fails closed: a list error (raised while paging) fails the check; only a ``resource.k8s.io``
    API that is not served at all counts as zero DRA usage.
    """
    pods: Iterator[JSON] = cluster.list(
        "v1", "pods", None, field_selector="status.phase!=Succeeded,status.phase!=Failed"
    )
    claims: Iterator[JSON] | None = None
    if mode.api_version is not None:
        claims = cluster.list(f"resource.k8s.io/{mode.api_version}", "resourceclaims")
    return count_used_gpus_by_node(pods, claims, mode)


def choose_node(
    cluster: Cluster,
    policy: str | None,
    node_selector: Mapping[str, str] | None,
    say: Say,
) -> tuple[allocmode.AllocationMode, NodeChoice]:
    """Probe → topology rejection → policy evidence + verify → candidates → occupancy → choice."""
    nodes, mode = probe_allocation(cluster)
    allocmode.reject_unsupported_gpu_topology(mode)
    say(allocmode.policy_evidence(policy, mode))
    allocmode.verify_policy(policy, mode)
    candidates = discover_candidate_nodes(nodes, mode, policy, node_selector)
    choice = select_worker_node(candidates, occupancy(cluster, mode), mode, policy)
    say(wiring_evidence(mode, choice))
    return mode, choice


def require_storage(cluster: Cluster, knobs: InferenceKnobs) -> None:
    """The model cache needs a StorageClass: fail fast (a failed check) when there is no default one."""
    if knobs.model_cache_enabled and knobs.model_cache_storage_class is None:
        require_cache_storage(knobs, cluster.list("storage.k8s.io/v1", "storageclasses"))


__all__ = ["choose_node", "dgd_crd_lookup", "occupancy", "probe_allocation", "require_storage"]
