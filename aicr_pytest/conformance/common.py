"""What the conformance checks share, one import away: every name of the modules below.

* :mod:`.failures` — how a check reports (:class:`ConformanceFailure` = ``failed``,
  ``Inconclusive`` = ``other``, ``CheckSkip``), AICR's ``[CODE] message: cause`` text, classified
  reads;
* :mod:`.fields` — small readers of API objects (``metadata``/``spec``/``status``, integers, images);
* :mod:`.workloads` — Deployment availability (instant and bounded), DaemonSet readiness, conditions;
* :mod:`.pods` — inner test pods: tolerations, stuck detection, waits, creation, logs;
* :mod:`.defaults` — AICR's timeouts and intervals, and the GPU checks' work budget.
"""

from __future__ import annotations

from collections.abc import Callable

from aicr_pytest.conformance.defaults import (
    CO_SCHEDULE_WINDOW,
    COLLECTOR_K8S_TIMEOUT,
    DRA_TEST_POD_TIMEOUT,
    GANG_TEST_POD_TIMEOUT,
    GPU_CLEANUP_RESERVE,
    GPU_MIN_WORK,
    K8S_CLEANUP_TIMEOUT,
    K8S_POD_READY_TIMEOUT,
    MSG_WORK_BUDGET,
    POD_POLL_INTERVAL,
    RESOURCE_VERIFICATION_TIMEOUT,
    SA_PROVISION_TIMEOUT,
    gpu_work_budget,
)
from aicr_pytest.conformance.failures import (
    JSON,
    ConformanceFailure,
    aicr_error,
    describe_cause,
    failure,
    inconclusive,
    is_structured,
    is_timeout,
    list_objects,
    one_line,
    read_error,
    read_object,
    status_of,
)
from aicr_pytest.conformance.fields import as_int, first_image, meta, spec, status
from aicr_pytest.conformance.pods import (
    MSG_SA_TIMEOUT,
    STUCK_REASONS,
    TOLERATE_ALL,
    create_pod_when_sa_ready,
    inner_tolerations,
    pod_log,
    pod_phase,
    pod_stuck_reason,
    prove_ran,
    wait_pod_bound,
    wait_pod_terminal,
    waiting_summary,
)
from aicr_pytest.conformance.workloads import (
    Condition,
    daemonset_ready,
    deployment_available,
    deployment_replicas,
    find_condition,
    wait_deployment_available,
)
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.core.goduration import format_go_duration, parse_go_duration

Emit = Callable[[str], None]

__all__ = [
    "COLLECTOR_K8S_TIMEOUT",
    "CO_SCHEDULE_WINDOW",
    "DRA_TEST_POD_TIMEOUT",
    "GANG_TEST_POD_TIMEOUT",
    "GPU_CLEANUP_RESERVE",
    "GPU_MIN_WORK",
    "JSON",
    "K8S_CLEANUP_TIMEOUT",
    "K8S_POD_READY_TIMEOUT",
    "MSG_SA_TIMEOUT",
    "MSG_WORK_BUDGET",
    "POD_POLL_INTERVAL",
    "RESOURCE_VERIFICATION_TIMEOUT",
    "SA_PROVISION_TIMEOUT",
    "STUCK_REASONS",
    "TOLERATE_ALL",
    "CheckSkip",
    "Condition",
    "ConformanceFailure",
    "Emit",
    "Inconclusive",
    "aicr_error",
    "as_int",
    "create_pod_when_sa_ready",
    "daemonset_ready",
    "deployment_available",
    "deployment_replicas",
    "describe_cause",
    "failure",
    "find_condition",
    "first_image",
    "format_go_duration",
    "gpu_work_budget",
    "inconclusive",
    "inner_tolerations",
    "is_structured",
    "is_timeout",
    "list_objects",
    "meta",
    "one_line",
    "parse_go_duration",
    "pod_log",
    "pod_phase",
    "pod_stuck_reason",
    "prove_ran",
    "read_error",
    "read_object",
    "spec",
    "status",
    "status_of",
    "wait_deployment_available",
    "wait_pod_bound",
    "wait_pod_terminal",
    "waiting_summary",
]
