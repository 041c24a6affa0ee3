"""Deployment phase, upstream AICR: the GKE GPU NIC checks (the Network census and the node topology).

The logic lives in :mod:`aicr_pytest.deployment.gke_gpu_nics` and
:mod:`aicr_pytest.deployment.gke_nic_topology`; these tests only wire the fixtures to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest import deployment  # lazy: a check's modules are imported when it runs

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest import CheckContext, Cluster, Recipe


def test_gke_gpu_nic_networks(aicr_check: CheckContext, aicr_recipe: Recipe, aicr_cluster: Cluster) -> None:
    deployment.check_gke_gpu_nic_networks(
        deployment.ClusterFetch(aicr_cluster), aicr_recipe.component_refs, emit=aicr_check.emit
    )


def test_gke_gpu_nic_topology(aicr_check: CheckContext, aicr_recipe: Recipe, aicr_cluster: Cluster) -> None:
    deployment.check_gke_gpu_nic_topology(
        deployment.ClusterFetch(aicr_cluster), aicr_recipe.component_refs, emit=aicr_check.emit
    )
