"""Conformance phase I: dra-support, gang-scheduling, robust-controller, secure-accelerator-access,
gpu-operator-health, platform-health; and the CNCF SHOULD checks (``test_cncf_should``: gpu-sharing,
driver-runtime-management, workload-sandboxing, high-performance-networking; opt-in with
``--cncf-should``, ``-m cncf-should``, or a recipe that names them).

Each test only wires the fixtures into a :class:`~aicr_pytest.conformance.ConformanceContext` and calls
the check function of :mod:`aicr_pytest.conformance` (the CNCF evidence collector calls the same
functions outside pytest). The evidence artifacts travel as CTRF ``stdout`` lines and, structured,
under ``extra["aicr.artifacts"]``.
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
def conformance_ctx(
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
        if ctx.artifacts.artifacts:
            aicr_check.extra[EXTRA_KEY] = ctx.artifacts_json()


def test_conformance(aicr_check: CheckContext, conformance_ctx: conformance.ConformanceContext) -> None:
    conformance.check_function(aicr_check.name)(conformance_ctx)


def test_cncf_should(aicr_check: CheckContext, conformance_ctx: conformance.ConformanceContext) -> None:
    conformance.check_function(aicr_check.name)(conformance_ctx)
