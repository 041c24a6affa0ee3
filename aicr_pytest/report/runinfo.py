"""What the HTML report shows about the run besides the CTRF tests: :class:`RunInfo` (recipe,
snapshot facts, readiness, phases, mode, interruption, evidence directory, warnings), built from the
plugin's validated inputs by :func:`run_info`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aicr_pytest.core.constraints import format_readiness_failure
from aicr_pytest.core.redact import redact_text

if TYPE_CHECKING:
    from aicr_pytest.core.inputs import RunState

__all__ = ["ReadinessEntry", "RunInfo", "SnapshotFacts", "run_info"]


@dataclass(frozen=True)
class ReadinessEntry:
    """One readiness (top-level recipe) constraint and how it went."""

    name: str
    expected: str
    actual: str
    passed: bool
    severity: str = "error"
    message: str | None = None


@dataclass(frozen=True)
class SnapshotFacts:
    source: str
    server_version: str | None = None
    node_count: str | None = None
    gpu_count: str | None = None
    source_node: str | None = None


@dataclass(frozen=True)
class RunInfo:
    """What the page shows about the run besides the CTRF tests."""

    recipe_name: str = "recipe"
    recipe_criteria: str = ""
    recipe_source: str = ""
    recipe_version: str | None = None
    snapshot: SnapshotFacts | None = None
    phases: tuple[str, ...] = ()
    mode: str = "live cluster"
    simulated: bool = False
    readiness: tuple[ReadinessEntry, ...] = ()
    readiness_blocked: bool = False
    interrupted: bool = False
    #: checks collected but not finished when the run stopped (``name (phase)``)
    unfinished: tuple[str, ...] = ()
    evidence_dir: Path | None = None
    warnings: tuple[str, ...] = ()
    cleanup_hints: tuple[str, ...] = ()


def run_info(
    run: RunState,
    *,
    interrupted: bool = False,
    unfinished: Sequence[str] = (),
    cleanup_hints: Sequence[str] = (),
) -> RunInfo:
    """:class:`RunInfo` from the plugin's validated inputs."""
    settings = run.settings
    recipe = run.recipe
    snap = None
    if run.snapshot is not None:
        s = run.snapshot
        snap = SnapshotFacts(
            source=redact_text(settings.snapshot or ""),
            server_version=s.get("K8s.server.version"),
            node_count=s.get("NodeTopology.summary.node-count"),
            gpu_count=s.get("GPU.hardware.gpu-count") or s.get("GPU.smi.gpu-count"),
            source_node=s.source_node,
        )
    mode = "--no-cluster (offline: snapshot only)" if settings.no_cluster else "live cluster"
    if settings.simulated and not settings.no_cluster:
        mode = "SIMULATED cluster (aicr-pytest simulate; no real GPUs)"
    readiness = tuple(
        ReadinessEntry(
            name=r.name,
            expected=r.expected,
            actual=r.actual,
            passed=r.passed,
            severity=r.severity,
            message=None if r.passed else format_readiness_failure(r),
        )
        for r in run.readiness.results
    )
    return RunInfo(
        recipe_name=recipe.display_name,
        recipe_criteria=recipe.criteria.summary(),
        recipe_source=redact_text(recipe.source or run.recipe_source),
        recipe_version=recipe.metadata.version,
        snapshot=snap,
        phases=tuple(settings.phases),
        mode=mode,
        simulated=bool(settings.simulated) and not settings.no_cluster,
        readiness=readiness,
        readiness_blocked=run.readiness.blocked,
        interrupted=interrupted,
        unfinished=tuple(unfinished),
        evidence_dir=settings.evidence_dir,
        warnings=tuple(run.warnings),
        cleanup_hints=tuple(cleanup_hints),
    )
