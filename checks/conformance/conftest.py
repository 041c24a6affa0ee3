"""The conformance checks' one fixture, ``conformance``: the check's
:class:`~aicr_pytest.conformance.ConformanceContext`, built from the run's fixtures.

What every check of the run shares is read once per session (:func:`conformance_env`, the part of
the process environment a check may read); the context itself is per check. Its evidence artifacts
travel as CTRF ``stdout`` lines and, structured, under ``extra["aicr.artifacts"]`` (whatever the
outcome; absent when the check recorded none).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from aicr_pytest import conformance as family  # lazy: a check's module is imported when it runs
from aicr_pytest.core.artifacts import EXTRA_KEY

if TYPE_CHECKING:  # annotations only: the cluster client and the check modules load when a check runs
    from aicr_pytest import AllocationPolicy, CheckContext, Clock, Cluster, Recipe, RunScope
    from aicr_pytest.conformance.context import ConformanceContext

#: what of the process environment the checks read (never the whole environment: no secrets)
ENV_KEYS = ("KUBERNETES_SERVICE_HOST",)


@pytest.fixture(scope="session")
def conformance_env() -> dict[str, str]:
    """The ``AICR_*`` knobs (and :data:`ENV_KEYS`) of the process environment, read once."""
    return {k: v for k, v in os.environ.items() if k.startswith("AICR_") or k in ENV_KEYS}


@pytest.fixture
def conformance(
    aicr_check: CheckContext,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_recipe: Recipe,
    aicr_allocation_policy: AllocationPolicy,
    aicr_clock: Clock,
    conformance_env: dict[str, str],
) -> Iterator[ConformanceContext]:
    ctx = family.context_for_check(
        aicr_check,
        aicr_cluster,
        aicr_run,
        component_refs=aicr_recipe.component_refs,
        allocation_policy=aicr_allocation_policy.mode,
        clock=aicr_clock,
        env=conformance_env,
        criteria=aicr_recipe.criteria.model_dump(),
    )
    try:
        yield ctx
    finally:
        if ctx.artifacts.artifacts:  # like every other extra: absent when the check recorded none
            aicr_check.extra[EXTRA_KEY] = ctx.artifacts_json()
