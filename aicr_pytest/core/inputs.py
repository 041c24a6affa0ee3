"""Everything a run loads before the first check: recipe, snapshot, data tree, policy, readiness.

Pure orchestration over the domain modules; no pytest here.  The plugin builds one
:class:`RunState` per process in ``pytest_configure`` (xdist workers build their own from the same
inputs, so collection stays a pure function of the inputs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core import catalog, constraints, runflags
from aicr_pytest.core.coherence import check_coherence
from aicr_pytest.core.datatree import DataTree, embedded_data_root
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.policy import AllocationPolicy, resolve_allocation_policy
from aicr_pytest.core.recipe import Constraint, Recipe, is_overlay, parse_recipe
from aicr_pytest.core.runflags import unknown_phase_keys_error
from aicr_pytest.core.settings import Settings
from aicr_pytest.core.snapshot import Snapshot, load_snapshot_text
from aicr_pytest.core.sources import load_source, load_yaml_document

log = logging.getLogger("aicr_pytest")

EMBEDDED_DATA_ROOT = embedded_data_root()

ConfigMapReader = Callable[[str, str], dict[str, str]]
Prevalidate = Callable[[list[str], Recipe, DataTree], None]
#: ``hydrate(overlay document, source, data) -> (RecipeResult document, the line saying so)``:
#: a ``RecipeMetadata`` overlay given as the recipe, built into a recipe as AICR builds it
#: (the plugin passes :func:`aicr_pytest.recipegen.hydrate.hydrate_overlay`)
OverlayHydrator = Callable[[dict[str, Any], str, DataTree], tuple[dict[str, Any], str]]


@dataclass
class ReadinessOutcome:
    """Results of the readiness pre-flight (top-level recipe constraints)."""

    results: list[constraints.ConstraintResult] = field(default_factory=list)

    @property
    def blocking_failures(self) -> list[constraints.ConstraintResult]:
        return [r for r in self.results if not r.passed and r.severity != "warning"]

    @property
    def warnings(self) -> list[constraints.ConstraintResult]:
        return [r for r in self.results if not r.passed and r.severity == "warning"]

    @property
    def blocked(self) -> bool:
        return bool(self.blocking_failures)


@dataclass
class SnapshotConstraint:
    """A phase constraint whose name addresses the snapshot (evaluated declaratively)."""

    phase: str
    constraint: Constraint


@dataclass
class RunState:
    settings: Settings
    recipe: Recipe
    recipe_source: str
    snapshot: Snapshot | None
    data: DataTree
    policy: AllocationPolicy
    readiness: ReadinessOutcome
    selected: list[catalog.SelectedCheck]
    snapshot_constraints: list[SnapshotConstraint]
    warnings: list[str] = field(default_factory=list)

    def phase_of(self, check_name: str) -> str:
        return catalog.BY_NAME[check_name].phase


def evaluate_readiness(recipe: Recipe, snapshot: Snapshot | None) -> ReadinessOutcome:
    """Evaluate ALL top-level constraints (not only up to the first failure)."""
    outcome = ReadinessOutcome()
    if not recipe.constraints:
        return outcome
    for c in recipe.constraints:
        severity = c.severity or "error"
        if snapshot is None:
            outcome.results.append(
                constraints.ConstraintResult(
                    name=c.name,
                    expected=c.value,
                    actual="",
                    passed=False,
                    error="no snapshot given (--snapshot); readiness constraints need one",
                    severity=severity,
                )
            )
            continue
        outcome.results.append(constraints.evaluate_constraint(c.name, c.value, snapshot, severity=severity))
    return outcome


def with_node_health(declared: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """``declared`` plus the node-health checks (``--node-health``), each in its phase, once."""
    return with_group(declared, catalog.HEALTH)


def with_group(declared: Mapping[str, Sequence[str]], group: str) -> dict[str, list[str]]:
    """``declared`` plus the checks of opt-in ``group``, each in its phase, once."""
    out = {phase: list(names) for phase, names in declared.items()}
    for name in catalog.names_in_group(group):
        names = out.setdefault(catalog.BY_NAME[name].phase, [])
        if name not in names:
            names.append(name)
    return out


MSG_ISOLATE_NO_NCCL = (
    "--isolate-bad-nodes: the run selects no NCCL all-reduce check ({checks}); select one or drop the flag"
)


def require_isolation_target(selected: Sequence[str], skipped: Sequence[str] = ()) -> None:
    """``--isolate-bad-nodes`` acts on the NCCL all-reduce checks: one of them must be selected."""
    nccl = catalog.nccl_all_reduce_checks()
    if not any(name in nccl and name not in skipped for name in selected):
        raise UsageError(MSG_ISOLATE_NO_NCCL.format(checks=", ".join(nccl)))


MSG_MARK_NO_HEALTH = (
    "{flag}: the run selects no node-health check ({checks}) and no --isolate-bad-nodes; "
    "add --node-health or drop the flag"
)


def require_node_verdicts(settings: Settings, selected: Sequence[str]) -> None:
    """``--label-bad-nodes``/``--taint-bad-nodes`` act on what the node-health checks or bad-node
    isolation say about nodes: one of them must be part of the run."""
    health = catalog.names_in_group(catalog.HEALTH)
    if settings.isolate_bad_nodes or any(
        n in health and n not in settings.skip_checks for n in selected
    ):
        return
    flag = "--taint-bad-nodes" if settings.taint_bad_nodes else "--label-bad-nodes"
    raise UsageError(MSG_MARK_NO_HEALTH.format(flag=flag, checks=", ".join(health)))


def load_run_state(
    settings: Settings,
    configmap_reader: ConfigMapReader | None = None,
    prevalidate: Prevalidate | None = None,
    binary_version: str = "",
    hydrate: OverlayHydrator | None = None,
) -> RunState:
    """Load and validate every input.  Raises :class:`UsageError` (exit 2) on bad input.

    ``prevalidate(check_names, recipe, data)`` validates what only the selected checks understand
    (the plugin passes its ``pytest_aicr_prevalidate`` hook); it runs after selection and before
    the allocation policy is resolved.  ``binary_version`` is this tool's version, for the
    version-skew advisory.  ``hydrate`` builds a ``RecipeMetadata`` overlay given as the recipe into
    a recipe (without it an overlay is refused).
    """
    if settings.recipe is None:
        raise UsageError("--recipe is required")
    if settings.no_cluster:
        configmap_reader = None
    data = DataTree(EMBEDDED_DATA_ROOT, settings.data)

    raw_recipe = load_yaml_document(settings.recipe, "recipe", configmap_reader)
    hydrated: list[str] = []
    if hydrate is not None and is_overlay(raw_recipe):
        assert isinstance(raw_recipe, dict)
        raw_recipe, note = hydrate(raw_recipe, settings.recipe, data)
        hydrated.append(note)
    recipe, warnings = parse_recipe(raw_recipe, settings.recipe)
    warnings[:0] = hydrated
    if isinstance(raw_recipe, dict) and (
        phase_key_error := unknown_phase_keys_error(raw_recipe.get("validation"), recipe.source)
    ):
        raise phase_key_error
    check_coherence([(ref, ref.enabled) for ref in recipe.component_refs], data.registry_entry)

    snapshot: Snapshot | None = None
    if settings.snapshot is not None:
        body, label = load_source(settings.snapshot, kind="snapshot", configmap_reader=configmap_reader)
        fmt = "json" if label.lower().endswith(".json") else None
        snapshot = load_snapshot_text(body, label, format=fmt)

    # Constraint expressions are validated up front, so a malformed one is a usage error (exit 2)
    # rather than a surprise in the middle of a run.
    for c in recipe.constraints:
        constraints.validate_expression(c.value)
    declared = {p: recipe.phase_checks(p) for p in recipe.declared_phases()}
    asked = with_node_health(declared) if settings.node_health else declared
    if settings.cncf_should:
        asked = with_group(asked, catalog.CNCF_SHOULD)
    selected = catalog.select_checks(asked, settings.phases)
    warnings.extend(runflags.preflight_skip_checks(settings.skip_checks, asked, settings.phases))

    snapshot_constraints: list[SnapshotConstraint] = []
    for phase in settings.phases:
        for c in recipe.phase_constraints(phase):
            if constraints.is_snapshot_path(c.name):
                constraints.validate_expression(c.value)
                snapshot_constraints.append(SnapshotConstraint(phase, c))

    if settings.isolate_bad_nodes:
        require_isolation_target([s.spec.name for s in selected], settings.skip_checks)
    if settings.label_bad_nodes or settings.taint_bad_nodes:
        require_node_verdicts(settings, [s.spec.name for s in selected])
    if prevalidate is not None:
        prevalidate([s.spec.name for s in selected], recipe, data)

    policy = resolve_allocation_policy(recipe, data)
    warnings.extend(policy.warnings)
    readiness = evaluate_readiness(recipe, snapshot)
    if settings.require_gpu and (no_gpu := runflags.require_gpu_result(snapshot)) is not None:
        readiness.results.append(no_gpu)
    if not asked:
        warnings.append(runflags.MSG_NO_CHECKS)
    skew = runflags.version_skew_warning(
        binary_version,
        recipe.metadata.version or "",
        snapshot.metadata.get("version", "") if snapshot else "",
    )
    if skew is not None:
        warnings.append(skew)

    if settings.phases_explicit and not asked:
        warnings.append("recipe has no validation section; requested phases will have no checks")
    for phase in settings.phases if settings.phases_explicit else ():
        if not asked.get(phase):
            warnings.append(
                f"phase requested but no checks defined in recipe; phase will be empty phase={phase}"
            )

    return RunState(
        settings=settings,
        recipe=recipe,
        recipe_source=recipe.source,  # redacted (a presigned URL's signature stays out of reports)
        snapshot=snapshot,
        data=data,
        policy=policy,
        readiness=readiness,
        selected=selected,
        snapshot_constraints=snapshot_constraints,
        warnings=warnings,
    )
