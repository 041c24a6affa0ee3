"""The CNCF SHOULD checks: gpu-sharing, driver-runtime-management, workload-sandboxing,
high-performance-networking (opt-in: ``--cncf-should``, ``-m cncf-should``, or the recipe names them).

Wiring only: fixtures -> :class:`~aicr_pytest.conformance.context.ConformanceContext` -> the check's
``run_<check>`` function in :mod:`aicr_pytest.conformance`; the evidence artifacts travel as CTRF
``extra["aicr.artifacts"]`` whatever the outcome.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from aicr_pytest import conformance  # lazy: a check's module is imported when it runs
from aicr_pytest.core.artifacts import EXTRA_KEY

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest import AllocationPolicy, CheckContext, Clock, Cluster, Recipe, RunScope


@pytest.fixture
def should_ctx(
    aicr_check: CheckContext,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_recipe: Recipe,
    aicr_allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> Iterator[conformance.ConformanceContext]:
    ctx = conformance.context_for_check(
        aicr_check,
        aicr_cluster,
        aicr_run,
        component_refs=aicr_recipe.component_refs,
        allocation_policy=aicr_allocation_policy.mode,
        clock=aicr_clock,
    )
    try:
        yield ctx
    finally:
        aicr_check.extra[EXTRA_KEY] = ctx.artifacts_json()


def test_cncf_should(aicr_check: CheckContext, should_ctx: conformance.ConformanceContext) -> None:
    conformance.check_function(aicr_check.name)(should_ctx)
