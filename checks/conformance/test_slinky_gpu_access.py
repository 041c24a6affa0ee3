"""Conformance phase, upstream AICR v1.x: ``slinky-slurm-gpu-access``.

The test only wires the fixtures into a :class:`~aicr_pytest.conformance.ConformanceContext` (with
the recipe's criteria, which the check reads) and calls the check function of
:mod:`aicr_pytest.conformance.slinky_gpu_access`; the evidence travels as CTRF ``stdout`` lines and,
structured, under ``extra["aicr.artifacts"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from aicr_pytest import conformance  # lazy: a check's module is imported when it runs
from aicr_pytest.core.artifacts import EXTRA_KEY

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.policy import AllocationPolicy
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope
    from aicr_pytest.plugin.check import CheckContext

CRITERIA = ("service", "accelerator", "intent", "os", "platform")


@pytest.fixture
def slurm_ctx(
    check: CheckContext,
    cluster: Cluster,
    run: RunScope,
    recipe: Recipe,
    allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> Iterator[conformance.ConformanceContext]:
    ctx = conformance.context_for_check(
        check,
        cluster,
        run,
        component_refs=recipe.component_refs,
        allocation_policy=allocation_policy.mode,
        clock=aicr_clock,
        criteria={k: str(v) for k in CRITERIA if (v := getattr(recipe.criteria, k))},
    )
    try:
        yield ctx
    finally:
        check.extra[EXTRA_KEY] = ctx.artifacts_json()


def test_slinky_slurm_gpu_access(check: CheckContext, slurm_ctx: conformance.ConformanceContext) -> None:
    conformance.check_function(check.name)(slurm_ctx)
