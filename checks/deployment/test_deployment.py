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
    from aicr_pytest import (
        AllocationPolicy,
        CheckContext,
        Clock,
        Cluster,
        DataTree,
        Recipe,
        RunScope,
        Settings,
    )
    from aicr_pytest.deployment.fetch import ClusterFetch


@pytest.fixture
def fetch(aicr_cluster: Cluster) -> ClusterFetch:
    return deployment.ClusterFetch(aicr_cluster)


def test_operator_health(aicr_check: CheckContext, aicr_recipe: Recipe, fetch: ClusterFetch) -> None:
    deployment.check_operator_health(fetch, aicr_recipe.component_refs, emit=aicr_check.emit)


def test_gpu_operator_version(aicr_check: CheckContext, aicr_recipe: Recipe, fetch: ClusterFetch) -> None:
    deployment.check_gpu_operator_version(
        fetch,
        aicr_check.constraints,
        emit=aicr_check.emit,
        parse_expression=constraints.validate_expression,
        evaluate=constraints.evaluate,
        refs=aicr_recipe.component_refs,
    )


def test_expected_resources(
    aicr_check: CheckContext,
    aicr_recipe: Recipe,
    fetch: ClusterFetch,
    aicr_data_tree: DataTree,
    aicr_clock: Clock,
) -> None:
    deadline = aicr_clock.time() + aicr_check.timeout_s
    deployment.check_expected_resources(
        aicr_recipe.component_refs,
        fetch,
        read_data_file=lambda rel: aicr_data_tree.read_bytes(rel).decode("utf-8"),
        registry_entry=aicr_data_tree.registry_entry,
        emit=aicr_check.emit,
        clock=aicr_clock,
        deadline=deadline,
    )


def test_check_nvidia_smi(
    aicr_check: CheckContext,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_settings: Settings,
    aicr_allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> None:
    record = deployment.NvidiaSmiRun()
    floor = aicr_check.constraint(deployment.DRIVER_FLOOR_CONSTRAINT)
    try:
        deployment.check_nvidia_smi(
            aicr_cluster,
            aicr_run,
            image=aicr_settings.nvidia_smi_image,
            policy=aicr_allocation_policy.mode,
            node_selector=aicr_check.node_selector,
            tolerations=aicr_check.tolerations,
            budget_s=aicr_check.timeout_s,
            clock=aicr_clock,
            emit=aicr_check.emit,
            record=record,
            floor=floor.value if floor is not None else None,
        )
    finally:
        if record.namespace:  # verify pods were created: say where, with which image
            aicr_check.extra["aicr.nvidiaSmi"] = record.as_extra()
