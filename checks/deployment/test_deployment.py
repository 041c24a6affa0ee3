"""Deployment phase: are the components the recipe asks for installed and healthy?

The logic lives in :mod:`aicr_pytest.deployment` and :mod:`aicr_pytest.healthcheck`; these tests
only wire fixtures to it and map skips.
"""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest import constraints, deployment
from aicr_pytest.checkctx import CheckContext
from aicr_pytest.datatree import DataTree
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.fetch import ClusterFetch
from aicr_pytest.recipe import Recipe


@pytest.fixture
def fetch(cluster: Cluster) -> ClusterFetch:
    return ClusterFetch(cluster)


@pytest.mark.check("operator-health")
def test_operator_health(check: CheckContext, recipe: Recipe, fetch: ClusterFetch) -> None:
    deployment.check_operator_health(fetch, recipe.component_refs, emit=check.emit)


@pytest.mark.check("gpu-operator-version")
def test_gpu_operator_version(check: CheckContext, recipe: Recipe, fetch: ClusterFetch) -> None:
    deployment.check_gpu_operator_version(
        fetch,
        check.constraints,
        emit=check.emit,
        parse_expression=constraints.validate_expression,
        evaluate=constraints.evaluate,
        refs=recipe.component_refs,
    )


@pytest.mark.check("expected-resources")
def test_expected_resources(
    check: CheckContext, recipe: Recipe, fetch: ClusterFetch, data_tree: DataTree, aicr_clock: Any
) -> None:
    deadline = aicr_clock.time() + check.timeout_s
    deployment.check_expected_resources(
        recipe.component_refs,
        fetch,
        read_data_file=lambda rel: data_tree.read_bytes(rel).decode("utf-8"),
        registry_entry=data_tree.registry_entry,
        emit=check.emit,
        clock=aicr_clock.time,
        sleep=aicr_clock.sleep,
        deadline=deadline,
    )
