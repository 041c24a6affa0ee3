"""CNCF AI-conformance requirement ids -> our checks, features and the program's test names (data).

The program publishes one checklist template per Kubernetes version (cncf/k8s-ai-conformance
``docs/AIConformance-1.xx.yaml``); each requirement has an ``id`` such as ``gang_scheduling``.
:data:`REQUIREMENTS` is the one table that says, per id we know of:

* ``checks`` -- the catalog checks whose verdicts decide the requirement (empty: nothing of ours
  checks it yet, so it is left to manual evidence and never claimed);
* ``feature`` -- the ``--feature`` (per-feature evidence file) of :mod:`.features` that covers it;
* ``suite_test`` -- the test of the program's automated suite (kubernetes-sigs/ai-conformance
  ``test/``, the "hybrid verification" of v1.37: ``TestSecureAcceleratorAccess``,
  ``TestGangScheduling``, ``TestAcceleratorClusterAutoscaling``, ``TestRobustCRDControllerOperation``,
  ``TestWorkloadSandboxing``, ``TestAcceleratorDriverRuntimeManagement``,
  ``TestAcceleratorPerformanceMetrics``, ``TestAIServiceMetrics``) that verifies the same
  requirement; our JUnit test case takes that name, or our check's name where the suite has none.

Ids come from the v1.33-v1.36 templates (``dra_support`` was a requirement up to v1.35) and v1.37
(adds ``workload_sandboxing``).  An id that is not in the table -- a later template's -- is a
requirement nothing of ours checks: :func:`lookup` answers ``None`` and the checklist filler
leaves it to manual evidence.  Pure data and functions: no cluster access.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf import features


@dataclass(frozen=True)
class RequirementMap:
    """What of ours answers one checklist requirement (module docstring)."""

    id: str
    checks: tuple[str, ...] = ()
    feature: str | None = None
    suite_test: str | None = None

    @property
    def checked(self) -> bool:
        """Whether a check of ours decides this requirement."""
        return bool(self.checks)


REQUIREMENTS: Final[tuple[RequirementMap, ...]] = (
    # accelerators
    RequirementMap("dra_support", ("dra-support",), "dra-support"),
    RequirementMap(
        "driver_runtime_management",
        ("driver-runtime-management",),
        "driver-runtime-management",
        "TestAcceleratorDriverRuntimeManagement",
    ),
    RequirementMap("gpu_sharing", ("gpu-sharing",), "gpu-sharing"),
    RequirementMap("virtualized_accelerator"),
    # networking
    RequirementMap("ai_inference", ("inference-gateway",), "inference-gateway"),
    RequirementMap("advanced_inference_ingress"),
    RequirementMap(
        "high_performance_networking", ("high-performance-networking",), "high-performance-networking"
    ),
    RequirementMap("disaggregated_inference"),
    # scheduling and orchestration
    RequirementMap("gang_scheduling", ("gang-scheduling",), "gang-scheduling", "TestGangScheduling"),
    RequirementMap(
        "cluster_autoscaling",
        ("cluster-autoscaling",),
        "cluster-autoscaling",
        "TestAcceleratorClusterAutoscaling",
    ),
    RequirementMap("pod_autoscaling", ("pod-autoscaling",), "pod-autoscaling"),
    # observability
    RequirementMap(
        "accelerator_metrics",
        ("accelerator-metrics",),
        "accelerator-metrics",
        "TestAcceleratorPerformanceMetrics",
    ),
    RequirementMap(
        "ai_service_metrics", ("ai-service-metrics",), "ai-service-metrics", "TestAIServiceMetrics"
    ),
    # security
    RequirementMap(
        "secure_accelerator_access",
        ("secure-accelerator-access",),
        "secure-access",
        "TestSecureAcceleratorAccess",
    ),
    RequirementMap(
        "workload_sandboxing", ("workload-sandboxing",), "workload-sandboxing", "TestWorkloadSandboxing"
    ),
    # operator
    RequirementMap(
        "robust_controller",
        ("robust-controller",),
        "robust-operator",
        "TestRobustCRDControllerOperation",
    ),
)

BY_ID: Final[dict[str, RequirementMap]] = {r.id: r for r in REQUIREMENTS}
BY_CHECK: Final[dict[str, RequirementMap]] = {c: r for r in REQUIREMENTS for c in r.checks}

#: the ``--feature`` message of :mod:`.features`, listing requirement ids instead of feature names
MSG_UNKNOWN_FEATURE: Final = features.MSG_UNKNOWN


def lookup(requirement_id: str) -> RequirementMap | None:
    """The table row of a requirement id; ``None`` for an id we have never seen."""
    return BY_ID.get(requirement_id)


def junit_name(check: str) -> str:
    """The JUnit test-case name of a check: the program's suite test where one verifies the same
    requirement, else the check's own name."""
    row = BY_CHECK.get(check)
    return row.suite_test if row is not None and row.suite_test else check


def feature_requirement_ids() -> tuple[str, ...]:
    """The requirement ids a ``--feature`` may name, in table order (those with a feature)."""
    return tuple(r.id for r in REQUIREMENTS if r.feature is not None)


def requirement_of_feature_name(name: str) -> str:
    """A ``--feature`` spelling -> its requirement id.

    Accepted: the requirement id itself (``secure_accelerator_access``) and every name and alias of
    :mod:`.features` (``secure-access``, ``secure``); anything else is a :class:`UsageError`
    listing the requirement ids.
    """
    given = name.strip()
    row = BY_ID.get(given)
    if row is not None and row.feature is not None:
        return row.id
    feature = features.BY_SPELLING.get(given)
    if feature is not None:
        return feature.requirement
    raise UsageError(MSG_UNKNOWN_FEATURE.format(feature=given, valid=", ".join(feature_requirement_ids())))


def requirement_ids_of_features(names: Sequence[str] | None) -> tuple[str, ...]:
    """The requirement ids ``--feature`` names, in the user's order; empty or ``all``: every one."""
    given = [n.strip() for n in names or ()]
    resolved = tuple(requirement_of_feature_name(n) for n in given if n != features.ALL)
    if not resolved or features.ALL in given:
        return feature_requirement_ids()
    return resolved


__all__ = [
    "BY_CHECK",
    "BY_ID",
    "MSG_UNKNOWN_FEATURE",
    "REQUIREMENTS",
    "RequirementMap",
    "feature_requirement_ids",
    "junit_name",
    "lookup",
    "requirement_ids_of_features",
    "requirement_of_feature_name",
]
