"""The deployment-phase checks: are the recipe's components installed and healthy?

The pure modules (no pytest, no cluster client; objects are plain Kubernetes JSON dicts, looked
up through a :class:`~aicr_pytest.deployment.healthcheck.Fetch` callable, ``fetch(api_version,
kind, namespace, name, labels) -> list[dict]``; evidence lines go to an injected ``emit``):

* :mod:`.common` — :class:`CheckFailed`, component refs (:func:`enabled_refs`), Go-style text.
* :mod:`.operator_health` — ``operator-health``.
* :mod:`.expected_resources` — ``expected-resources``: namespaces, declared resources, the
  GPU readiness signals and the component health checks, concurrently.
* :mod:`.healthcheck` — component health checks: chainsaw-style assertion files run in-process,
  with :mod:`.treematch` (the assertion-tree matcher) and Go durations from
  :mod:`aicr_pytest.core.goduration`.
* :mod:`.operator_version` — ``gpu-operator-version``.
* :mod:`.nvidia_smi_plan` — ``check-nvidia-smi``: node choice, verify pods, log verdicts.
* :mod:`.driver_floor` — ``check-nvidia-smi``'s host-driver floor (``Deployment.gpu-driver.version``).
* :mod:`.gke_gpu_nics` — ``gke-gpu-nic-networks`` (upstream AICR v1.x): the GKE GPU NIC ``Network``
  objects GPUDirect TCPXO needs.
* :mod:`.gke_nic_topology` — ``gke-gpu-nic-topology`` (upstream AICR main): no gVNIC displacing a GPU NIC.

The cluster I/O:

* :mod:`.nvidia_smi` — ``check-nvidia-smi`` against a live cluster (pods, watch, logs).
* :mod:`.fetch` — :class:`~aicr_pytest.deployment.fetch.ClusterFetch`, the facade as a ``fetch``.

The names callers outside the package use are re-exported here, lazily (``from aicr_pytest import
deployment``; ``deployment.check_operator_health(...)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aicr_pytest.core.lazy import lazy_exports

if TYPE_CHECKING:  # at run time each name is imported on first use (start-up time)
    from aicr_pytest.deployment.common import (
        CheckFailed,
        enabled_refs,
        is_enabled,
    )
    from aicr_pytest.deployment.driver_floor import DRIVER_FLOOR_CONSTRAINT
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
    from aicr_pytest.deployment.fetch import ClusterFetch
    from aicr_pytest.deployment.gke_gpu_nics import check_gke_gpu_nic_networks
    from aicr_pytest.deployment.gke_nic_topology import check_gke_gpu_nic_topology
    from aicr_pytest.deployment.nvidia_smi import NvidiaSmiRun, check_nvidia_smi
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

#: where each re-exported name lives: importing the package imports none of its modules
_LAZY: dict[str, str] = {
    "ClusterFetch": "aicr_pytest.deployment.fetch",
    "DRIVER_FLOOR_CONSTRAINT": "aicr_pytest.deployment.driver_floor",
    "check_gke_gpu_nic_networks": "aicr_pytest.deployment.gke_gpu_nics",
    "check_gke_gpu_nic_topology": "aicr_pytest.deployment.gke_nic_topology",
    "NvidiaSmiRun": "aicr_pytest.deployment.nvidia_smi",
    "check_nvidia_smi": "aicr_pytest.deployment.nvidia_smi",
    "CheckFailed": "aicr_pytest.deployment.common",
    "enabled_refs": "aicr_pytest.deployment.common",
    "is_enabled": "aicr_pytest.deployment.common",
    "MSG_ALL_HEALTHY": "aicr_pytest.deployment.expected_resources",
    "SIGNAL_DWELL": "aicr_pytest.deployment.expected_resources",
    "ReadinessSignal": "aicr_pytest.deployment.expected_resources",
    "check_expected_resources": "aicr_pytest.deployment.expected_resources",
    "dra_probe": "aicr_pytest.deployment.expected_resources",
    "extract_skyhook_names": "aicr_pytest.deployment.expected_resources",
    "nodewright_probe": "aicr_pytest.deployment.expected_resources",
    "wait_for_readiness_signals": "aicr_pytest.deployment.expected_resources",
    "DEFAULT_NVIDIA_SMI_IMAGE": "aicr_pytest.deployment.nvidia_smi_plan",
    "DRA_GPU_DRIVER": "aicr_pytest.deployment.nvidia_smi_plan",
    "MSG_CREATE_FAILED": "aicr_pytest.deployment.nvidia_smi_plan",
    "MSG_NODES_QUERY_FAILED": "aicr_pytest.deployment.nvidia_smi_plan",
    "VERIFY_CONTAINER": "aicr_pytest.deployment.nvidia_smi_plan",
    "VERIFY_POD_PREFIX": "aicr_pytest.deployment.nvidia_smi_plan",
    "GpuNode": "aicr_pytest.deployment.nvidia_smi_plan",
    "GpuNodeInventory": "aicr_pytest.deployment.nvidia_smi_plan",
    "NodeResult": "aicr_pytest.deployment.nvidia_smi_plan",
    "build_verify_claim": "aicr_pytest.deployment.nvidia_smi_plan",
    "build_verify_pod": "aicr_pytest.deployment.nvidia_smi_plan",
    "discover_gpu_nodes": "aicr_pytest.deployment.nvidia_smi_plan",
    "dra_gpu_devices": "aicr_pytest.deployment.nvidia_smi_plan",
    "format_pod_failure": "aicr_pytest.deployment.nvidia_smi_plan",
    "gpu_busy_reasons": "aicr_pytest.deployment.nvidia_smi_plan",
    "parse_nvidia_smi_output": "aicr_pytest.deployment.nvidia_smi_plan",
    "plan_nvidia_smi": "aicr_pytest.deployment.nvidia_smi_plan",
    "summarize_nvidia_smi": "aicr_pytest.deployment.nvidia_smi_plan",
    "verify_node_output": "aicr_pytest.deployment.nvidia_smi_plan",
    "verify_pod_name": "aicr_pytest.deployment.nvidia_smi_plan",
    "check_operator_health": "aicr_pytest.deployment.operator_health",
    "evaluate_operator_health": "aicr_pytest.deployment.operator_health",
    "operator_namespace": "aicr_pytest.deployment.operator_health",
    "check_gpu_operator_version": "aicr_pytest.deployment.operator_version",
    "extract_operator_version": "aicr_pytest.deployment.operator_version",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = [
    "DEFAULT_NVIDIA_SMI_IMAGE",
    "DRA_GPU_DRIVER",
    "DRIVER_FLOOR_CONSTRAINT",
    "MSG_ALL_HEALTHY",
    "MSG_CREATE_FAILED",
    "MSG_NODES_QUERY_FAILED",
    "SIGNAL_DWELL",
    "VERIFY_CONTAINER",
    "VERIFY_POD_PREFIX",
    "CheckFailed",
    "ClusterFetch",
    "GpuNode",
    "GpuNodeInventory",
    "NodeResult",
    "NvidiaSmiRun",
    "ReadinessSignal",
    "build_verify_claim",
    "build_verify_pod",
    "check_expected_resources",
    "check_gke_gpu_nic_networks",
    "check_gke_gpu_nic_topology",
    "check_gpu_operator_version",
    "check_nvidia_smi",
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
