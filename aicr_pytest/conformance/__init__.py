"""The conformance phase: is the cluster ready for real AI workloads?

Every check is a plain function ``run_<check>(ctx: ConformanceContext) -> None`` in its own module;
it passes by returning and otherwise raises :class:`~aicr_pytest.conformance.common.ConformanceFailure`
(``failed``, AICR's ``[CODE] …`` text), :class:`~aicr_pytest.core.errors.Inconclusive` (``other``) or
:class:`~aicr_pytest.core.errors.CheckSkip` (``skipped``). The bundled pytest checks
(``checks/conformance/``) only build the context from fixtures and call the function; the CNCF
evidence collector calls the same functions outside pytest (:func:`check_function`).

Shared layer:

* :mod:`.context` — :class:`ConformanceContext` (cluster, run scope, artifact recorder, emit, recipe
  component refs, allocation policy, tolerations, node selector, clock, deadline, env) and
  :func:`context_for_check` (from the plugin's fixtures);
* :mod:`.common` — AICR's error strings (:func:`aicr_error`), classified reads, Deployment
  availability (instant and bounded wait), DaemonSet readiness, condition lookup, pod-stuck
  detection, the watch-based terminal-pod wait, create-pod-when-SA-ready, the GPU work budget, AICR's
  timeouts and Go durations;
* :mod:`.testns` — the per-run GPU test namespace (ownership label, adopt/foreign, ordered cleanup);
* :mod:`.dra` — the served ``resource.k8s.io`` version, NVIDIA ResourceSlice validation, the
  allocation-mode probe and the configured-policy verdict;
* :mod:`.gpu_workload` — the behavioural GPU pods (claim, granted/unauthorized containers, the
  no-allocation probe), their output parsing and verdicts.

Phase I checks: :mod:`.dra_support`, :mod:`.gang_scheduling`, :mod:`.robust_controller`,
:mod:`.secure_access` (``secure-accelerator-access``), :mod:`.gpu_operator_health`,
:mod:`.platform_health`.

Checks (catalog name → function): see :data:`CHECKS`, derived from the catalog rows' ``entry``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from aicr_pytest.core import catalog
from aicr_pytest.core.lazy import lazy_exports

if TYPE_CHECKING:  # at run time each name is imported on first use (start-up time)
    from aicr_pytest.conformance.common import (
        ConformanceFailure,
        aicr_error,
        create_pod_when_sa_ready,
        daemonset_ready,
        deployment_available,
        find_condition,
        gpu_work_budget,
        inner_tolerations,
        pod_stuck_reason,
        wait_deployment_available,
        wait_pod_terminal,
    )
    from aicr_pytest.conformance.context import (
        ConformanceContext,
        context_for_check,
    )
    from aicr_pytest.conformance.testns import (
        CleanupStatus,
        GpuTestNamespace,
    )

#: where each re-exported name lives: importing the package imports none of its modules
_LAZY: dict[str, str] = {
    "ConformanceFailure": "aicr_pytest.conformance.common",
    "aicr_error": "aicr_pytest.conformance.common",
    "create_pod_when_sa_ready": "aicr_pytest.conformance.common",
    "daemonset_ready": "aicr_pytest.conformance.common",
    "deployment_available": "aicr_pytest.conformance.common",
    "find_condition": "aicr_pytest.conformance.common",
    "gpu_work_budget": "aicr_pytest.conformance.common",
    "inner_tolerations": "aicr_pytest.conformance.common",
    "pod_stuck_reason": "aicr_pytest.conformance.common",
    "wait_deployment_available": "aicr_pytest.conformance.common",
    "wait_pod_terminal": "aicr_pytest.conformance.common",
    "ConformanceContext": "aicr_pytest.conformance.context",
    "context_for_check": "aicr_pytest.conformance.context",
    "CleanupStatus": "aicr_pytest.conformance.testns",
    "GpuTestNamespace": "aicr_pytest.conformance.testns",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

CheckFunction = Callable[["ConformanceContext"], None]

#: catalog name → ``"module:function"`` of every conformance check (the bundled checks, the CNCF
#: collector): the catalog rows whose entry point is a function of this package
CHECKS: dict[str, str] = {
    c.name: c.entry for c in catalog.CATALOG if c.entry is not None and c.entry.startswith(f"{__name__}.")
}


def check_function(name: str) -> CheckFunction:
    """The ``run_<check>`` function of catalog check ``name`` (its row's ``entry``, read when called),
    imported now (``KeyError`` when the catalog has no such check or its row names no entry)."""
    entry = catalog.BY_NAME[name].entry
    if entry is None:
        raise KeyError(name)
    module, _, function = entry.partition(":")
    fn: CheckFunction = getattr(importlib.import_module(module), function)
    return fn


__all__ = [
    "CHECKS",
    "CheckFunction",
    "CleanupStatus",
    "ConformanceContext",
    "ConformanceFailure",
    "GpuTestNamespace",
    "aicr_error",
    "check_function",
    "context_for_check",
    "create_pod_when_sa_ready",
    "daemonset_ready",
    "deployment_available",
    "find_condition",
    "gpu_work_budget",
    "inner_tolerations",
    "pod_stuck_reason",
    "wait_deployment_available",
    "wait_pod_terminal",
]
