"""Conformance phase, upstream AICR v1.x: ``slinky-slurm-gpu-access``.

The test only wires the fixtures into a :class:`~aicr_pytest.conformance.ConformanceContext` (with
the recipe's criteria, which the check reads) and calls the check function of
:mod:`aicr_pytest.conformance.slinky_gpu_access`; the evidence travels as CTRF ``stdout`` lines and,
structured, under ``extra["aicr.artifacts"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest import conformance  # lazy: a check's module is imported when it runs
from aicr_pytest.core.artifacts import EXTRA_KEY

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest import AllocationPolicy, CheckContext, Clock, Cluster, Recipe, RunScope


def test_slinky_slurm_gpu_access(
    aicr_check: CheckContext, aicr_cluster: Cluster, aicr_run: RunScope, aicr_recipe: Recipe,
    aicr_allocation_policy: AllocationPolicy, aicr_clock: Clock,
) -> None:  # fmt: skip
    refs, policy = aicr_recipe.component_refs, aicr_allocation_policy.mode
    crit = aicr_recipe.criteria.model_dump()
    ctx = conformance.context_for_check(
        aicr_check,
        aicr_cluster,
        aicr_run,
        component_refs=refs,
        allocation_policy=policy,
        clock=aicr_clock,
        criteria=crit,
    )
    try:
        conformance.check_function(aicr_check.name)(ctx)
    finally:
        aicr_check.extra[EXTRA_KEY] = ctx.artifacts_json()
