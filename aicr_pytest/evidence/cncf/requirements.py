"""CNCF AI-conformance requirement ids -> our checks, features and the program's test names (data).

The program publishes one checklist template per Kubernetes version (cncf/k8s-ai-conformance
``docs/AIConformance-1.xx.yaml``); each requirement has an ``id`` such as ``gang_scheduling``.
:data:`REQUIREMENTS` says, per id we know of (:data:`TEMPLATE`, the ids and suite tests; the rest is
derived from the catalog rows that name the id in ``CheckSpec.cncf``):

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

from aicr_pytest.core import catalog
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


#: the checklist's requirement ids we know of, in the template's order, with the program's suite test
#: that verifies the same requirement (``None``: the suite has none)
TEMPLATE: Final[tuple[tuple[str, str | None], ...]] = (
    # accelerators
    ("dra_support", None),
    ("driver_runtime_management", "TestAcceleratorDriverRuntimeManagement"),
    ("gpu_sharing", None),
    ("virtualized_accelerator", None),
    # networking
    ("ai_inference", None),
    ("advanced_inference_ingress", None),
    ("high_performance_networking", None),
    ("disaggregated_inference", None),
    # scheduling and orchestration
    ("gang_scheduling", "TestGangScheduling"),
    ("cluster_autoscaling", "TestAcceleratorClusterAutoscaling"),
    ("pod_autoscaling", None),
    # observability
    ("accelerator_metrics", "TestAcceleratorPerformanceMetrics"),
    ("ai_service_metrics", "TestAIServiceMetrics"),
    # security
    ("secure_accelerator_access", "TestSecureAcceleratorAccess"),
    ("workload_sandboxing", "TestWorkloadSandboxing"),
    # operator
    ("robust_controller", "TestRobustCRDControllerOperation"),
)


def _requirements(rows: Sequence[catalog.CheckSpec]) -> tuple[RequirementMap, ...]:
    """:data:`TEMPLATE` with each requirement's checks (the catalog rows that name it, catalog order)
    and its feature (:mod:`.features`)."""
    built = []
    for requirement, suite_test in TEMPLATE:
        checks = tuple(c.name for c in rows if c.cncf is not None and c.cncf.requirement == requirement)
        feature = features.BY_REQUIREMENT.get(requirement)
        built.append(
            RequirementMap(requirement, checks, feature.name if feature is not None else None, suite_test)
        )
    return tuple(built)


REQUIREMENTS: Final[tuple[RequirementMap, ...]] = _requirements(catalog.CATALOG)

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
    "TEMPLATE",
    "RequirementMap",
    "feature_requirement_ids",
    "junit_name",
    "lookup",
    "requirement_ids_of_features",
    "requirement_of_feature_name",
]
