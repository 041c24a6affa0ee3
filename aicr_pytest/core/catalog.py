"""The built-in check catalog and recipe-driven check selection.

The catalog is data: every check AICR's `aicr validate` knows, with its phase, its timeout and a
description.  Catalog order is the execution and report order within a phase (as in AICR).

Selection differs from AICR on purpose: AICR silently drops a declared check name that is not in
the catalog or that belongs to another phase, so users lose coverage without knowing.  We reject
both as usage errors (exit 2) and list the valid names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aicr_pytest.core.errors import UsageError

PHASES: tuple[str, ...] = ("deployment", "conformance", "performance")

PHASE_DESCRIPTIONS: Mapping[str, str] = {
    "deployment": "deployment phase: are the components the recipe asks for installed and healthy?",
    "conformance": "conformance phase: does the cluster support DRA, gang scheduling, autoscaling, ...?",
    "performance": "performance phase: does the cluster hit the recipe's bandwidth/throughput thresholds?",
}


@dataclass(frozen=True)
class CheckSpec:
    """One catalog entry."""

    name: str
    phase: str
    timeout_s: int
    description: str


def _m(minutes: int) -> int:
    return minutes * 60


CATALOG: tuple[CheckSpec, ...] = (
    CheckSpec("operator-health", "deployment", _m(2), "GPU operator pods are running"),
    CheckSpec(
        "expected-resources",
        "deployment",
        _m(8),
        "component namespaces, expected resources, readiness signals and health checks",
    ),
    CheckSpec("gpu-operator-version", "deployment", _m(2), "running GPU operator version meets the recipe"),
    CheckSpec("check-nvidia-smi", "deployment", _m(10), "nvidia-smi runs on every GPU node"),
    CheckSpec("dra-support", "conformance", _m(5), "Dynamic Resource Allocation support"),
    CheckSpec("gang-scheduling", "conformance", _m(10), "gang scheduling with the KAI scheduler"),
    CheckSpec("accelerator-metrics", "conformance", _m(5), "accelerator metrics from the DCGM exporter"),
    CheckSpec("ai-service-metrics", "conformance", _m(5), "AI service metrics via Prometheus"),
    CheckSpec("inference-gateway", "conformance", _m(5), "inference gateway is operational"),
    CheckSpec("pod-autoscaling", "conformance", _m(10), "HPA-driven pod autoscaling with GPU metrics"),
    CheckSpec("cluster-autoscaling", "conformance", _m(10), "cluster autoscaling"),
    CheckSpec("robust-controller", "conformance", _m(5), "AI operator controller and webhooks"),
    CheckSpec("secure-accelerator-access", "conformance", _m(10), "GPU access via DRA or device plugin only"),
    CheckSpec("slinky-slurm-health", "conformance", _m(5), "Slinky Slurm controller and job submission"),
    CheckSpec("slinky-slurm-imex-channel", "conformance", _m(5), "IMEX channels for concurrent Slurm jobs"),
    CheckSpec("gpu-operator-health", "conformance", _m(2), "GPU operator health (diagnostic)"),
    CheckSpec("platform-health", "conformance", _m(5), "platform component health (diagnostic)"),
    CheckSpec("nccl-all-reduce-bw", "performance", _m(30), "NCCL all-reduce bus bandwidth"),
    CheckSpec("nccl-all-reduce-bw-net", "performance", _m(30), "NCCL all-reduce bandwidth over NET"),
    CheckSpec("nccl-all-reduce-bw-nvls", "performance", _m(30), "NCCL all-reduce bandwidth over NVLS"),
    CheckSpec("inference-perf", "performance", _m(65), "Dynamo + vLLM inference throughput and TTFT"),
)

BY_NAME: Mapping[str, CheckSpec] = {c.name: c for c in CATALOG}
CATALOG_INDEX: Mapping[str, int] = {c.name: i for i, c in enumerate(CATALOG)}


def names_in_phase(phase: str) -> list[str]:
    return [c.name for c in CATALOG if c.phase == phase]


def parse_phases(values: Sequence[str] | None) -> list[str]:
    """Validate ``--phase`` values (repeatable) the way ``aicr validate`` does.

    Returns phases in the order given (explicit phases run in command-line order); duplicates are
    dropped; ``all`` alone (or nothing) means every phase in the default order.
    """
    if not values:
        return list(PHASES)
    seen: list[str] = []
    for raw in values:
        for value in raw.split(","):
            value = value.strip()
            if value not in (*PHASES, "all"):
                raise UsageError(
                    f'invalid phase "{value}": must be one of: deployment, performance, conformance, all'
                )
            if value not in seen:
                seen.append(value)
    if "all" in seen:
        if len(seen) > 1:
            raise UsageError('phase "all" cannot be combined with other phases')
        return list(PHASES)
    return seen


@dataclass(frozen=True)
class SelectedCheck:
    spec: CheckSpec
    order: int  # position in the run: phase order, then catalog order


def select_checks(
    declared: Mapping[str, Sequence[str]],
    phases: Sequence[str],
    catalog: Iterable[CheckSpec] = CATALOG,
) -> list[SelectedCheck]:
    """catalog ∩ ``validation.<phase>.checks``, ordered by phase then catalog order.

    ``declared`` maps each phase the recipe declares to its check names.  Every declared name is
    validated (also for phases not selected with ``--phase``): an unknown name or a name listed
    under the wrong phase is a :class:`UsageError` listing the valid names.
    """
    entries = list(catalog)
    by_name = {c.name: c for c in entries}
    problems: list[str] = []
    for phase in PHASES:
        for name in declared.get(phase, ()):
            spec = by_name.get(name)
            if spec is None:
                problems.append(f'unknown check "{name}" in validation.{phase}.checks')
            elif spec.phase != phase:
                problems.append(
                    f'check "{name}" is listed under validation.{phase}.checks but belongs to the '
                    f"{spec.phase} phase"
                )
    for phase in declared:
        if phase not in PHASES:
            problems.append(
                f'invalid validation phase "{phase}" (valid: deployment, conformance, performance)'
            )
    if problems:
        valid = "; ".join(
            f"{phase}: {', '.join(c.name for c in entries if c.phase == phase)}" for phase in PHASES
        )
        raise UsageError(f"{'; '.join(problems)} (valid checks — {valid})")

    selected: list[SelectedCheck] = []
    for phase in phases:
        wanted = set(declared.get(phase, ()))
        for spec in entries:
            if spec.phase == phase and spec.name in wanted:
                selected.append(SelectedCheck(spec, len(selected)))
    return selected
