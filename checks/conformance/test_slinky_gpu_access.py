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
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.policy import AllocationPolicy
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope
    from aicr_pytest.plugin.check import CheckContext


def test_slinky_slurm_gpu_access(
    check: CheckContext, cluster: Cluster, run: RunScope, recipe: Recipe,
    allocation_policy: AllocationPolicy, aicr_clock: Clock,
) -> None:  # fmt: skip
    refs, policy, crit = recipe.component_refs, allocation_policy.mode, recipe.criteria.model_dump()
    ctx = conformance.context_for_check(
        check, cluster, run, component_refs=refs, allocation_policy=policy, clock=aicr_clock, criteria=crit
    )
    try:
        conformance.check_function(check.name)(ctx)
    finally:
        check.extra[EXTRA_KEY] = ctx.artifacts_json()
