"""The CNCF AI-conformance features and ``--feature`` resolution.

Each :class:`Feature` names its canonical ``--feature`` spelling, its aliases, the evidence file it
writes and its CNCF requirement id. :data:`FEATURES` are the nine a submission collects by default;
:data:`SHOULD_FEATURES` the four SHOULD requirements a cluster shows (the ``cncf-should`` checks),
collected when ``--cncf-should`` asks for them or ``--feature`` names one.  The conformance check
whose behaviour a feature exercises is the catalog row that names the feature
(``CheckSpec.cncf_feature``); the check function of :mod:`aicr_pytest.conformance` is reused, so a
feature and its check never disagree.
Pure data and functions: no cluster access.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from aicr_pytest.core import catalog
from aicr_pytest.core.errors import UsageError

ALL: Final = "all"


@dataclass(frozen=True)
class Feature:
    """One CNCF feature: how it is spelled, what it writes and which check it exercises."""

    name: str
    aliases: tuple[str, ...]
    file: str
    requirement: str
    title: str
    description: str

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def check(self) -> str:
        """The catalog check whose row names this feature."""
        return catalog.check_of_feature(self.name)


FEATURES: Final[tuple[Feature, ...]] = (
    Feature(
        "dra-support",
        ("dra",),
        "dra-support.md",
        "dra_support",
        "DRA Support (Dynamic Resource Allocation)",
        "The cluster serves the resource.k8s.io API and an NVIDIA DRA driver publishes GPU devices; "
        "where whole GPUs come from DRA, a test pod is allocated a GPU through a ResourceClaim.",
    ),
    Feature(
        "gang-scheduling",
        ("gang",),
        "gang-scheduling.md",
        "gang_scheduling",
        "Gang Scheduling (KAI Scheduler)",
        "A gang scheduler is installed and schedules a PodGroup's members together (all or nothing).",
    ),
    Feature(
        "secure-access",
        ("secure",),
        "secure-accelerator-access.md",
        "secure_accelerator_access",
        "Secure Accelerator Access",
        "Unauthenticated clients are denied access to workloads, secrets, nodes and DRA claims "
        "(SubjectAccessReviews as system:anonymous), and GPUs are reachable only through the "
        "allocation mechanism (DRA claim or device-plugin limit): a granted container sees exactly "
        "its GPU, a container without an allocation sees none.",
    ),
    Feature(
        "accelerator-metrics",
        ("metrics",),
        "accelerator-metrics.md",
        "accelerator_metrics",
        "Accelerator Metrics (DCGM Exporter)",
        "The DCGM exporter serves per-GPU utilization, memory, temperature and power metrics in the "
        "Prometheus text format, and a Prometheus scrape configuration (ServiceMonitor, PodMonitor or "
        "scrape annotation) selects it.",
    ),
    Feature(
        "ai-service-metrics",
        ("service-metrics",),
        "ai-service-metrics.md",
        "ai_service_metrics",
        "AI Service Metrics (Prometheus)",
        "Prometheus holds the GPU time series (DCGM_FI_DEV_GPU_UTIL), the custom metrics API "
        "(prometheus-adapter) is served, and a running inference service's metrics (Dynamo "
        "dynamo_* series, NIM token/latency series) are in Prometheus; with no inference service "
        "found, only the first two are checked.",
    ),
    Feature(
        "inference-gateway",
        ("gateway",),
        "inference-gateway.md",
        "ai_inference",
        "Inference API Gateway (agentgateway)",
        "The Gateway API and Inference Extension are installed, the gateway is accepted and "
        "programmed, and its LoadBalancer network exposure is recorded.",
    ),
    Feature(
        "robust-operator",
        ("operator",),
        "robust-operator.md",
        "robust_controller",
        "Robust AI Operator",
        "An AI operator's controller is running with every replica ready and holds a renewed "
        "leader-election Lease, and its validating admission webhook rejects an invalid custom "
        "resource; an operator with nothing to reconcile is a skip.",
    ),
    Feature(
        "pod-autoscaling",
        ("hpa",),
        "pod-autoscaling.md",
        "pod_autoscaling",
        "Pod Autoscaling (HPA)",
        "A HorizontalPodAutoscaler driven by a GPU metric scales a GPU workload up and back down.",
    ),
    Feature(
        "cluster-autoscaling",
        (),
        "cluster-autoscaling.md",
        "cluster_autoscaling",
        "Cluster Autoscaling",
        "GPU nodes can be added on demand: Karpenter (preferred) or a managed node group's autoscaling.",
    ),
)

#: the SHOULD requirements a cluster shows: opt-in (``--cncf-should``, or named with ``--feature``)
SHOULD_FEATURES: Final[tuple[Feature, ...]] = (
    Feature(
        "gpu-sharing",
        ("sharing",),
        "gpu-sharing.md",
        "gpu_sharing",
        "GPU Sharing (MIG, time-slicing, DRA partitions)",
        "GPU nodes expose a sharing strategy as schedulable resources: MIG resources or a MIG product, "
        "time-slicing/MPS replicas, or DRA devices that are partitions of a GPU.",
    ),
    Feature(
        "driver-runtime-management",
        ("driver-runtime",),
        "driver-runtime-management.md",
        "driver_runtime_management",
        "Accelerator Driver and Runtime Management",
        "Every GPU node runs the same GPU driver version (from DRA's driverVersion attribute where "
        "published, else GFD's labels) and the same container-runtime version.",
    ),
    Feature(
        "workload-sandboxing",
        ("sandboxing",),
        "workload-sandboxing.md",
        "workload_sandboxing",
        "Workload Sandboxing (gVisor, Kata)",
        "A sandboxed RuntimeClass runs a probe pod whose kernel differs from its node's kernel.",
    ),
    Feature(
        "high-performance-networking",
        ("rdma",),
        "high-performance-networking.md",
        "high_performance_networking",
        "High-Performance Networking (RDMA NICs)",
        "RDMA-capable NICs are exposed to pods: devices of a NIC DRA driver (preferred) or extended "
        "resources such as vpc.amazonaws.com/efa or rdma/*.",
    ),
)
#: every feature: the default nine, then the SHOULD ones
ALL_FEATURES: Final[tuple[Feature, ...]] = (*FEATURES, *SHOULD_FEATURES)

BY_NAME: Final[dict[str, Feature]] = {f.name: f for f in ALL_FEATURES}
BY_SPELLING: Final[dict[str, Feature]] = {s: f for f in ALL_FEATURES for s in f.spellings}
BY_CHECK: Final[dict[str, Feature]] = {f.check: f for f in ALL_FEATURES}
#: a feature by the checklist template's requirement id (``secure_accelerator_access``)
BY_REQUIREMENT: Final[dict[str, Feature]] = {f.requirement: f for f in ALL_FEATURES}

MSG_UNKNOWN: Final = '[INVALID_REQUEST] unknown feature "{feature}"; valid features: {valid}'


def valid_features_text() -> str:
    return ", ".join(f.name for f in ALL_FEATURES)


def resolve_features(names: Sequence[str] | None, *, should: bool = False) -> tuple[Feature, ...]:
    """The features ``--feature`` asks for, in the user's order (duplicates kept, as AICR does).

    A feature is named by its name, an alias or its checklist requirement id (``gang_scheduling``).
    Empty, or any ``all``: every default feature in table order, and with ``should``
    (``--cncf-should``) the SHOULD features after them.  An unknown name is a :class:`UsageError`
    naming the valid features.
    """
    given = [n.strip() for n in names or ()]
    resolved: list[Feature] = []
    wildcard = False
    for name in given:
        if name == ALL:
            wildcard = True
            continue
        feature = BY_SPELLING.get(name) or BY_REQUIREMENT.get(name)
        if feature is None:
            raise UsageError(MSG_UNKNOWN.format(feature=name, valid=valid_features_text()))
        resolved.append(feature)
    if wildcard or not resolved:
        return ALL_FEATURES if should else FEATURES
    return tuple(resolved)


__all__ = [
    "ALL",
    "ALL_FEATURES",
    "BY_CHECK",
    "BY_NAME",
    "BY_REQUIREMENT",
    "BY_SPELLING",
    "FEATURES",
    "MSG_UNKNOWN",
    "SHOULD_FEATURES",
    "Feature",
    "resolve_features",
    "valid_features_text",
]
