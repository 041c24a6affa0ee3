"""Deployment phase: are the components the recipe asks for installed and healthy?

The logic lives in :mod:`aicr_pytest.deployment` and :mod:`aicr_pytest.deployment.healthcheck`; these tests
only wire fixtures to it and map skips.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from aicr_pytest import deployment  # lazy: a check's modules are imported when it runs
from aicr_pytest.core import constraints

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.policy import AllocationPolicy
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.deployment.fetch import ClusterFetch
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope
    from aicr_pytest.plugin.check import CheckContext


@pytest.fixture
def fetch(cluster: Cluster) -> ClusterFetch:
    return deployment.ClusterFetch(cluster)


def test_operator_health(check: CheckContext, recipe: Recipe, fetch: ClusterFetch) -> None:
    deployment.check_operator_health(fetch, recipe.component_refs, emit=check.emit)


def test_gpu_operator_version(check: CheckContext, recipe: Recipe, fetch: ClusterFetch) -> None:
    deployment.check_gpu_operator_version(
        fetch,
        check.constraints,
        emit=check.emit,
        parse_expression=constraints.validate_expression,
        evaluate=constraints.evaluate,
        refs=recipe.component_refs,
    )


def test_expected_resources(
    check: CheckContext, recipe: Recipe, fetch: ClusterFetch, data_tree: DataTree, aicr_clock: Clock
) -> None:
    deadline = aicr_clock.time() + check.timeout_s
    deployment.check_expected_resources(
        recipe.component_refs,
        fetch,
        read_data_file=lambda rel: data_tree.read_bytes(rel).decode("utf-8"),
        registry_entry=data_tree.registry_entry,
        emit=check.emit,
        clock=aicr_clock,
        deadline=deadline,
    )


def test_check_nvidia_smi(
    check: CheckContext,
    cluster: Cluster,
    run: RunScope,
    aicr_settings: Settings,
    allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> None:
    record = deployment.NvidiaSmiRun()
    try:
        deployment.check_nvidia_smi(
            cluster,
            run,
            image=aicr_settings.nvidia_smi_image,
            policy=allocation_policy.mode,
            node_selector=check.node_selector,
            tolerations=check.tolerations,
            budget_s=check.timeout_s,
            clock=aicr_clock,
            emit=check.emit,
            record=record,
        )
    finally:
        if record.namespace:  # verify pods were created: say where, with which image
            check.extra["aicr.nvidiaSmi"] = record.as_extra()
