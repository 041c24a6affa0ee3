"""Conformance phase, part II: accelerator-metrics, ai-service-metrics, inference-gateway,
pod-autoscaling, cluster-autoscaling, slinky-slurm-health, slinky-slurm-imex-channel.

Wiring only: fixtures → :class:`~aicr_pytest.conformance.context.ConformanceContext` → the check's
``run_<check>`` function in :mod:`aicr_pytest.conformance`. Each check's evidence artifacts travel
as CTRF ``extra["aicr.artifacts"]`` whatever the outcome.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from aicr_pytest import conformance as checks  # lazy: a check's module is imported when it runs
from aicr_pytest.core.artifacts import EXTRA_KEY

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest import AllocationPolicy, CheckContext, Clock, Cluster, Recipe, RunScope
    from aicr_pytest.conformance.context import ConformanceContext

#: what of the process environment the checks read (never the whole environment: no secrets)
ENV_KEYS = ("KUBERNETES_SERVICE_HOST",)


def check_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("AICR_") or k in ENV_KEYS}


@pytest.fixture
def conformance(
    aicr_check: CheckContext,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_recipe: Recipe,
    aicr_allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
) -> Iterator[ConformanceContext]:
    ctx = checks.context_for_check(
        aicr_check,
        aicr_cluster,
        aicr_run,
        component_refs=aicr_recipe.component_refs,
        allocation_policy=aicr_allocation_policy.mode,
        clock=aicr_clock,
        env=check_env(),
    )
    try:
        yield ctx
    finally:
        aicr_check.extra[EXTRA_KEY] = ctx.artifacts_json()


def test_accelerator_metrics(conformance: ConformanceContext) -> None:
    checks.check_function("accelerator-metrics")(conformance)


def test_ai_service_metrics(conformance: ConformanceContext) -> None:
    checks.check_function("ai-service-metrics")(conformance)


def test_inference_gateway(conformance: ConformanceContext) -> None:
    checks.check_function("inference-gateway")(conformance)


def test_pod_autoscaling(conformance: ConformanceContext) -> None:
    checks.check_function("pod-autoscaling")(conformance)


def test_cluster_autoscaling(conformance: ConformanceContext) -> None:
    checks.check_function("cluster-autoscaling")(conformance)


def test_slinky_slurm_health(conformance: ConformanceContext) -> None:
    checks.check_function("slinky-slurm-health")(conformance)


def test_slinky_slurm_imex_channel(conformance: ConformanceContext) -> None:
    checks.check_function("slinky-slurm-imex-channel")(conformance)
