"""The CNCF AI-conformance features and ``--feature`` resolution.

A feature is named in one place, the catalog row of the check that evidences it
(``CheckSpec.cncf``: its requirement id, its ``--feature`` name and aliases); this module adds the
prose the evidence prints (:data:`PROSE`, keyed by requirement id: evidence file, title,
description) and derives each :class:`Feature` from the two. :data:`FEATURES` are the ones a
submission collects by default; :data:`SHOULD_FEATURES` the SHOULD requirements a cluster shows (the
``cncf-should`` group's checks), collected when ``--cncf-should`` asks for them or ``--feature``
names one.  The check function of :mod:`aicr_pytest.conformance` is reused, so a feature and its
check never disagree.
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
class Prose:
    """What the evidence says of one feature, keyed by its checklist requirement id.

    ``detected``: for a feature whose check looks only for recipe components, the components the
    collector detects on the cluster when the recipe does not name them (component, namespace,
    Deployment name or ``None`` for "any"); ``allocation_block``: the evidence records the GPU
    allocation mode block.
    """

    file: str
    title: str
    description: str
    detected: tuple[tuple[str, str, str | None], ...] = ()
    allocation_block: bool = False


@dataclass(frozen=True)
class Feature:
    """One CNCF feature: how it is spelled, what it writes and which check it exercises."""

    name: str
    aliases: tuple[str, ...]
    file: str
    requirement: str
    title: str
    description: str
    #: the catalog check whose row names this feature
    check: str
    detected: tuple[tuple[str, str, str | None], ...] = ()
    allocation_block: bool = False

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


#: each feature's prose by requirement id, in the order a submission collects them: the default
#: features, then the SHOULD ones
PROSE: Final[dict[str, Prose]] = {
    "dra_support": Prose(
        "dra-support.md",
        "DRA Support (Dynamic Resource Allocation)",
        "The cluster serves the resource.k8s.io API and an NVIDIA DRA driver publishes GPU devices; "
        "where whole GPUs come from DRA, a test pod is allocated a GPU through a ResourceClaim.",
        allocation_block=True,
    ),
    "gang_scheduling": Prose(
        "gang-scheduling.md",
        "Gang Scheduling (KAI Scheduler)",
        "A gang scheduler is installed and schedules a PodGroup's members together (all or nothing).",
    ),
    "secure_accelerator_access": Prose(
        "secure-accelerator-access.md",
        "Secure Accelerator Access",
        "Unauthenticated clients are denied access to workloads, secrets, nodes and DRA claims "
        "(SubjectAccessReviews as system:anonymous), and GPUs are reachable only through the "
        "allocation mechanism (DRA claim or device-plugin limit): a granted container sees exactly "
        "its GPU, a container without an allocation sees none.",
        allocation_block=True,
    ),
    "accelerator_metrics": Prose(
        "accelerator-metrics.md",
        "Accelerator Metrics (DCGM Exporter)",
        "The DCGM exporter serves per-GPU utilization, memory, temperature and power metrics in the "
        "Prometheus text format, and a Prometheus scrape configuration (ServiceMonitor, PodMonitor or "
        "scrape annotation) selects it.",
    ),
    "ai_service_metrics": Prose(
        "ai-service-metrics.md",
        "AI Service Metrics (Prometheus)",
        "Prometheus holds the GPU time series (DCGM_FI_DEV_GPU_UTIL), the custom metrics API "
        "(prometheus-adapter) is served, and a running inference service's metrics (Dynamo "
        "dynamo_* series, NIM token/latency series) are in Prometheus; with no inference service "
        "found, only the first two are checked.",
    ),
    "ai_inference": Prose(
        "inference-gateway.md",
        "Inference API Gateway (agentgateway)",
        "The Gateway API and Inference Extension are installed, the gateway is accepted and "
        "programmed, and its LoadBalancer network exposure is recorded.",
        detected=(("agentgateway", "agentgateway-system", None),),
    ),
    "robust_controller": Prose(
        "robust-operator.md",
        "Robust AI Operator",
        "An AI operator's controller is running with every replica ready and holds a renewed "
        "leader-election Lease, and its validating admission webhook rejects an invalid custom "
        "resource; an operator with nothing to reconcile is a skip.",
        detected=(
            ("dynamo-platform", "dynamo-system", "dynamo-platform-dynamo-operator-controller-manager"),
            ("kubeflow-trainer", "kubeflow", "kubeflow-trainer-controller-manager"),
        ),
    ),
    "pod_autoscaling": Prose(
        "pod-autoscaling.md",
        "Pod Autoscaling (HPA)",
        "A HorizontalPodAutoscaler driven by a GPU metric scales a GPU workload up and back down.",
    ),
    "cluster_autoscaling": Prose(
        "cluster-autoscaling.md",
        "Cluster Autoscaling",
        "GPU nodes can be added on demand: Karpenter (preferred) or a managed node group's autoscaling.",
    ),
    "gpu_sharing": Prose(
        "gpu-sharing.md",
        "GPU Sharing (MIG, time-slicing, DRA partitions)",
        "GPU nodes expose a sharing strategy as schedulable resources: MIG resources or a MIG product, "
        "time-slicing/MPS replicas, or DRA devices that are partitions of a GPU.",
    ),
    "driver_runtime_management": Prose(
        "driver-runtime-management.md",
        "Accelerator Driver and Runtime Management",
        "Every GPU node runs the same GPU driver version (from DRA's driverVersion attribute where "
        "published, else GFD's labels) and the same container-runtime version.",
    ),
    "workload_sandboxing": Prose(
        "workload-sandboxing.md",
        "Workload Sandboxing (gVisor, Kata)",
        "A sandboxed RuntimeClass runs a probe pod whose kernel differs from its node's kernel.",
    ),
    "high_performance_networking": Prose(
        "high-performance-networking.md",
        "High-Performance Networking (RDMA NICs)",
        "RDMA-capable NICs are exposed to pods: devices of a NIC DRA driver (preferred) or extended "
        "resources such as vpc.amazonaws.com/efa or rdma/*.",
    ),
}


def _features(rows: Sequence[catalog.CheckSpec]) -> tuple[Feature, ...]:
    """The catalog rows that name a CNCF feature, with their prose, in :data:`PROSE` order."""
    by_requirement = {c.cncf.requirement: c for c in rows if c.cncf is not None}
    built: list[Feature] = []
    for requirement, prose in PROSE.items():
        row = by_requirement.get(requirement)
        if row is None or row.cncf is None or row.cncf_feature is None:
            continue
        built.append(
            Feature(
                row.cncf_feature,
                row.cncf.aliases,
                prose.file,
                requirement,
                prose.title,
                prose.description,
                row.name,
                prose.detected,
                prose.allocation_block,
            )
        )
    return tuple(built)


_ALL: Final = _features(catalog.CATALOG)
FEATURES: Final[tuple[Feature, ...]] = tuple(
    f for f in _ALL if catalog.BY_NAME[f.check].group != catalog.CNCF_SHOULD
)
#: the SHOULD requirements a cluster shows: opt-in (``--cncf-should``, or named with ``--feature``)
SHOULD_FEATURES: Final[tuple[Feature, ...]] = tuple(
    f for f in _ALL if catalog.BY_NAME[f.check].group == catalog.CNCF_SHOULD
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
    "PROSE",
    "SHOULD_FEATURES",
    "Feature",
    "Prose",
    "resolve_features",
    "valid_features_text",
]
