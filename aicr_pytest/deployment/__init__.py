"""The four deployment-phase checks (spec §5): are the recipe's components installed and healthy?

The pure modules (no pytest, no cluster client; objects are plain Kubernetes JSON dicts, looked
up through a :class:`~aicr_pytest.deployment.healthcheck.Fetch` callable, ``fetch(api_version,
kind, namespace, name, labels) -> list[dict]``; evidence lines go to an injected ``emit``):

* :mod:`.common` — :class:`CheckFailed`, component refs (:func:`enabled_refs`), Go-style text.
* :mod:`.operator_health` — ``operator-health`` (§5.1).
* :mod:`.expected_resources` — ``expected-resources`` (§5.2): namespaces, declared resources, the
  GPU readiness signals and the component health checks, concurrently.
* :mod:`.healthcheck` — component health checks: chainsaw-style assertion files run in-process
  (§5.2.1), with :mod:`.treematch` (the assertion-tree matcher) and :mod:`.goduration` (Go durations).
* :mod:`.operator_version` — ``gpu-operator-version`` (§5.3).
* :mod:`.nvidia_smi_plan` — ``check-nvidia-smi`` (§5.4): node choice, verify pods, log verdicts.

The cluster I/O:

* :mod:`.nvidia_smi` — ``check-nvidia-smi`` against a live cluster (pods, watch, logs).
* :mod:`.fetch` — :class:`~aicr_pytest.deployment.fetch.ClusterFetch`, the facade as a ``fetch``.

The names callers outside the package use are re-exported here (``from aicr_pytest import
deployment``; ``deployment.check_operator_health(...)``).
"""

from __future__ import annotations

from aicr_pytest.deployment.common import (
    CheckFailed,
    enabled_refs,
    is_enabled,
)
from aicr_pytest.deployment.expected_resources import (
    MSG_ALL_HEALTHY,
    SIGNAL_DWELL,
    ReadinessSignal,
    check_expected_resources,
    dra_probe,
    extract_skyhook_names,
    nodewright_probe,
    wait_for_readiness_signals,
)
from aicr_pytest.deployment.nvidia_smi_plan import (
    DEFAULT_NVIDIA_SMI_IMAGE,
    DRA_GPU_DRIVER,
    MSG_CREATE_FAILED,
    MSG_NODES_QUERY_FAILED,
    VERIFY_CONTAINER,
    VERIFY_POD_PREFIX,
    GpuNode,
    GpuNodeInventory,
    NodeResult,
    build_verify_claim,
    build_verify_pod,
    discover_gpu_nodes,
    dra_gpu_devices,
    format_pod_failure,
    gpu_busy_reasons,
    parse_nvidia_smi_output,
    plan_nvidia_smi,
    summarize_nvidia_smi,
    verify_node_output,
    verify_pod_name,
)
from aicr_pytest.deployment.operator_health import (
    check_operator_health,
    evaluate_operator_health,
    operator_namespace,
)
from aicr_pytest.deployment.operator_version import (
    check_gpu_operator_version,
    extract_operator_version,
)

__all__ = [
    "DEFAULT_NVIDIA_SMI_IMAGE",
    "DRA_GPU_DRIVER",
    "MSG_ALL_HEALTHY",
    "MSG_CREATE_FAILED",
    "MSG_NODES_QUERY_FAILED",
    "SIGNAL_DWELL",
    "VERIFY_CONTAINER",
    "VERIFY_POD_PREFIX",
    "CheckFailed",
    "GpuNode",
    "GpuNodeInventory",
    "NodeResult",
    "ReadinessSignal",
    "build_verify_claim",
    "build_verify_pod",
    "check_expected_resources",
    "check_gpu_operator_version",
    "check_operator_health",
    "discover_gpu_nodes",
    "dra_gpu_devices",
    "dra_probe",
    "enabled_refs",
    "evaluate_operator_health",
    "extract_operator_version",
    "extract_skyhook_names",
    "format_pod_failure",
    "gpu_busy_reasons",
    "is_enabled",
    "nodewright_probe",
    "operator_namespace",
    "parse_nvidia_smi_output",
    "plan_nvidia_smi",
    "summarize_nvidia_smi",
    "verify_node_output",
    "verify_pod_name",
    "wait_for_readiness_signals",
]
