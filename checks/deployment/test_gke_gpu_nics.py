"""Deployment phase, upstream AICR v1.x: ``gke-gpu-nic-networks``.

The logic lives in :mod:`aicr_pytest.deployment.gke_gpu_nics`; this test only wires the fixtures to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest import deployment  # lazy: a check's modules are imported when it runs

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.plugin.check import CheckContext


def test_gke_gpu_nic_networks(check: CheckContext, recipe: Recipe, cluster: Cluster) -> None:
    deployment.check_gke_gpu_nic_networks(
        deployment.ClusterFetch(cluster), recipe.component_refs, emit=check.emit
    )
