"""Component health checks: chainsaw-style assertion files, executed in-process.

We never shell out to a chainsaw binary.  The parts:

* :mod:`.model` — the model and the loader (:func:`parse_health_check`), with the read-only
  allowlist (``assert`` and ``error`` only);
* :mod:`.source` — where a component's check comes from: inline ``healthCheckAsserts`` or the
  registry's ``healthCheck.assertFile`` read through the data root;
* :mod:`.runner` — one evaluation of an operation against an injected ``fetch``, the retry loop on
  an injected clock, several components in parallel.

The tree matcher (:func:`~aicr_pytest.deployment.treematch.match_tree`) and Go durations
(:mod:`aicr_pytest.core.goduration`) live in their own modules; this package re-exports them.
"""

from __future__ import annotations

from aicr_pytest.core.goduration import format_go_duration, parse_go_duration
from aicr_pytest.deployment.healthcheck.model import (
    ALLOWED_OPERATIONS,
    HealthCheck,
    HealthCheckRejected,
    ResourceAssertion,
    TestCase,
    TestStep,
    parse_health_check,
)
from aicr_pytest.deployment.healthcheck.runner import (
    ABSENT_RESOURCE_GRACE,
    ASSERT_RETRY_INTERVAL,
    DEFAULT_TEST_TIMEOUT,
    MAX_PARALLEL_COMPONENTS,
    Fetch,
    HealthCheckResult,
    NotRegistered,
    evaluate_once,
    load_and_parse,
    run_health_check,
    run_health_checks,
)
from aicr_pytest.deployment.healthcheck.source import registry_lookup, resolve_health_check_source
from aicr_pytest.deployment.treematch import AssertionEngineError, match_tree

__all__ = [
    "ABSENT_RESOURCE_GRACE",
    "ALLOWED_OPERATIONS",
    "ASSERT_RETRY_INTERVAL",
    "DEFAULT_TEST_TIMEOUT",
    "MAX_PARALLEL_COMPONENTS",
    "AssertionEngineError",
    "Fetch",
    "HealthCheck",
    "HealthCheckRejected",
    "HealthCheckResult",
    "NotRegistered",
    "ResourceAssertion",
    "TestCase",
    "TestStep",
    "evaluate_once",
    "format_go_duration",
    "load_and_parse",
    "match_tree",
    "parse_go_duration",
    "parse_health_check",
    "registry_lookup",
    "resolve_health_check_source",
    "run_health_check",
    "run_health_checks",
]
