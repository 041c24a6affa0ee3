"""Merge semantics of recipe generation and the checks on the merged result.

* :func:`merge_spec` — an overlay's spec onto the spec built so far (AICR ``RecipeMetadataSpec.Merge``).
* :func:`merge_mixins` — the accumulated mixins after the chains, with their collision errors.
* :func:`validate_dependencies` and :func:`deployment_order` — unknown dependencies, cycles and the
  topological order of the enabled components (Kahn, ties broken by name at every step).

Everything works on copies: the overlays loaded from the data tree are never modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from aicr_pytest.core.errors import UsageError
from aicr_pytest.recipegen.spec import (
    PHASE_KEYS,
    ComponentRef,
    Constraint,
    Mixin,
    Phase,
    Spec,
)

# Messages as AICR words them.
MSG_MIXIN_NOT_FOUND = 'mixin "{mixin}" not found in recipes/mixins/'
MSG_MIXIN_CONSTRAINT_CONFLICT = (
    'mixin "{mixin}" constraint "{constraint}" conflicts with inheritance chain or another mixin'
)
MSG_MIXIN_COMPONENT_CONFLICT = (
    'mixin "{mixin}" component "{component}" sets identity/sourcing field "{field}" which conflicts with '
    "the inheritance chain; mixins may only contribute Namespace, ManifestFiles, or PreManifestFiles to an "
    "existing component"
)
MSG_UNKNOWN_DEPENDENCY = 'component "{component}" references unknown dependency "{dependency}"'
MSG_CYCLE = "dependency validation failed: circular dependency detected: [{path}]"
MSG_ORDER_CYCLE = "cannot determine deployment order: circular dependencies exist"


def _union(base: Sequence[str], extra: Sequence[str]) -> list[str]:
    """Base order first, then new entries; duplicates dropped."""
    return list(dict.fromkeys([*base, *extra]))


def deep_merge_map(dst: dict[str, Any], src: Mapping[str, Any]) -> None:
    """Maps merge recursively; anything else (lists, scalars, ``None``) replaces."""
    for key, value in src.items():
        if isinstance(value, Mapping):
            current = dst.get(key)
            if isinstance(current, dict):
                deep_merge_map(current, value)
            else:
                dst[key] = copy.deepcopy(dict(value))
        else:
            dst[key] = copy.deepcopy(value)


def merge_component_ref(base: ComponentRef, overlay: ComponentRef) -> ComponentRef:
    """Per field: non-empty strings replace, ``overrides`` deep-merge, dependency and manifest lists
    append (deduplicated), ``patches``/``expectedResources`` replace when set, flags are set-if-true."""
    out = copy.deepcopy(base)
    for name in ("namespace", "chart", "type", "source", "version", "tag", "values_file", "path"):
        value = getattr(overlay, name)
        if value:
            setattr(out, name, value)
    if overlay.overrides:
        if out.overrides is None:
            out.overrides = {}
        deep_merge_map(out.overrides, overlay.overrides)
    if overlay.patches:
        out.patches = list(overlay.patches)
    if overlay.dependency_refs:
        out.dependency_refs = _union(out.dependency_refs, overlay.dependency_refs)
    if overlay.manifest_files:
        out.manifest_files = _union(out.manifest_files, overlay.manifest_files)
    if overlay.pre_manifest_files:
        out.pre_manifest_files = _union(out.pre_manifest_files, overlay.pre_manifest_files)
    if overlay.cleanup:
        out.cleanup = True
    if overlay.expected_resources:
        out.expected_resources = copy.deepcopy(overlay.expected_resources)
    if overlay.health_check_asserts:
        out.health_check_asserts = overlay.health_check_asserts
    if overlay.health_check_skip:
        out.health_check_skip = True
    return out


def _merge_phase_constraints(base: list[Constraint], overlay: list[Constraint]) -> list[Constraint]:
    """Union by name: an overlay entry replaces the base entry in place, new names are appended."""
    winners = {c.name: c for c in overlay}  # last one wins inside the overlay too
    out: list[Constraint] = []
    seen: set[str] = set()
    for c in [*base, *overlay]:
        if c.name in seen:
            continue
        seen.add(c.name)
        out.append(copy.deepcopy(winners.get(c.name, c)))
    return out


def merge_phase(base: Phase | None, overlay: Phase | None) -> Phase | None:
    """``validation.<phase>``: ``None`` inherits, an explicit ``[]`` clears, lists union."""
    if overlay is None:
        return base
    if base is None:
        return copy.deepcopy(overlay)
    out = Phase(
        timeout=overlay.timeout or base.timeout,
        infrastructure=overlay.infrastructure or base.infrastructure,
    )
    if overlay.checks is not None and not overlay.checks:
        out.checks = []
    elif base.checks or overlay.checks:
        out.checks = _union(base.checks or [], overlay.checks or [])
    if overlay.constraints is not None and not overlay.constraints:
        out.constraints = []
    elif base.constraints or overlay.constraints:
        out.constraints = _merge_phase_constraints(base.constraints or [], overlay.constraints or [])
    source = overlay.node_selection if overlay.node_selection is not None else base.node_selection
    out.node_selection = copy.deepcopy(source)
    return out


def merge_spec(spec: Spec, other: Spec) -> None:
    """Merge ``other`` into ``spec`` in place (``other`` wins); constraints and componentRefs come out
    deduplicated by name and sorted by name."""
    constraints = {c.name: c for c in spec.constraints}
    for c in other.constraints:
        constraints[c.name] = copy.deepcopy(c)
    spec.constraints = [constraints[name] for name in sorted(constraints)]

    refs = {r.name: r for r in spec.component_refs}
    for ref in other.component_refs:
        refs[ref.name] = merge_component_ref(refs[ref.name], ref) if ref.name in refs else copy.deepcopy(ref)
    spec.component_refs = [refs[name] for name in sorted(refs)]

    if other.validation is not None:
        if spec.validation is None:
            spec.validation = copy.deepcopy(other.validation)
        else:
            for key in PHASE_KEYS:
                setattr(
                    spec.validation,
                    key,
                    merge_phase(getattr(spec.validation, key), getattr(other.validation, key)),
                )
    spec.mixins = _union(spec.mixins, other.mixins)


def base_copy(base: Spec) -> Spec:
    """The start of every merge: base's constraints, componentRefs and validation (not its mixins)."""
    return Spec(
        constraints=copy.deepcopy(base.constraints),
        component_refs=copy.deepcopy(base.component_refs),
        validation=copy.deepcopy(base.validation) if base.validation is not None else None,
    )


def _unsafe_mixin_field(ref: ComponentRef) -> str | None:
    """The first identity/sourcing field a mixin sets on a component that already exists."""
    checks: list[tuple[str, object]] = [
        ("chart", ref.chart),
        ("type", ref.type),
        ("source", ref.source),
        ("version", ref.version),
        ("tag", ref.tag),
        ("path", ref.path),
        ("valuesFile", ref.values_file),
        ("overrides", ref.overrides),
        ("patches", ref.patches),
        ("dependencyRefs", ref.dependency_refs),
        ("cleanup", ref.cleanup),
        ("expectedResources", ref.expected_resources),
        ("healthCheckAsserts", ref.health_check_asserts),
        ("healthCheckSkip", ref.health_check_skip),
    ]
    return next((name for name, value in checks if value), None)


def merge_mixins(spec: Spec, mixins: Mapping[str, Mixin]) -> set[str]:
    """Merge ``spec.mixins`` (in order) into ``spec`` and drop the list.

    A mixin constraint whose name is already present is an error; a mixin componentRef that names an
    existing component may only add ``namespace``, ``manifestFiles`` and ``preManifestFiles``.
    Returns the names of the constraints the mixins contributed.
    """
    contributed: set[str] = set()
    if not spec.mixins:
        return contributed
    constraints = {c.name for c in spec.constraints}
    components = {r.name for r in spec.component_refs}
    for name in spec.mixins:
        mixin = mixins.get(name)
        if mixin is None:
            raise UsageError(MSG_MIXIN_NOT_FOUND.format(mixin=name))
        for c in mixin.constraints:
            if c.name in constraints:
                raise UsageError(MSG_MIXIN_CONSTRAINT_CONFLICT.format(mixin=name, constraint=c.name))
        for ref in mixin.component_refs:
            if ref.name in components and (bad := _unsafe_mixin_field(ref)) is not None:
                raise UsageError(
                    MSG_MIXIN_COMPONENT_CONFLICT.format(mixin=name, component=ref.name, field=bad)
                )
        merge_spec(spec, Spec(constraints=mixin.constraints, component_refs=mixin.component_refs))
        for c in mixin.constraints:
            constraints.add(c.name)
            contributed.add(c.name)
        components.update(r.name for r in mixin.component_refs)
    spec.mixins = []
    return contributed


def validate_dependencies(refs: Sequence[ComponentRef]) -> None:
    """Every ``dependencyRefs`` entry names a declared component, and there is no cycle."""
    known = {r.name for r in refs}
    for ref in refs:
        for dep in ref.dependency_refs:
            if dep not in known:
                raise UsageError(MSG_UNKNOWN_DEPENDENCY.format(component=ref.name, dependency=dep))
    deps = {r.name: r.dependency_refs for r in refs}
    visited: set[str] = set()
    on_stack: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> None:
        visited.add(node)
        on_stack.add(node)
        path.append(node)
        for nxt in deps.get(node, []):
            if nxt not in visited:
                visit(nxt)
            elif nxt in on_stack:
                cycle = [*path[path.index(nxt) :], nxt]
                raise UsageError(MSG_CYCLE.format(path=" ".join(cycle)))
        path.pop()
        on_stack.discard(node)

    for ref in refs:
        if ref.name not in visited:
            visit(ref.name)


def deployment_order(refs: Sequence[ComponentRef]) -> list[str]:
    """Kahn's algorithm over the enabled components, the ready queue re-sorted after every pop.

    An edge to a declared but disabled component counts as satisfied (provided outside the recipe);
    an edge to an undeclared component keeps the node from ever becoming ready.
    """
    declared = {r.name for r in refs}
    enabled = {r.name for r in refs if r.enabled}
    in_degree: dict[str, int] = {}
    dependents: dict[str, list[str]] = {}
    for ref in refs:
        if ref.name not in enabled:
            continue
        degree = 0
        for dep in ref.dependency_refs:
            if dep in declared and dep not in enabled:
                continue
            degree += 1
            dependents.setdefault(dep, []).append(ref.name)
        in_degree[ref.name] = degree
    queue = sorted(name for name, degree in in_degree.items() if degree == 0)
    order: list[str] = []
    while queue:
        node = queue.pop(0)
        order.append(node)
        for dependent in dependents.get(node, []):
            in_degree[dependent] -= 1
            if in_degree[dependent] == 0:
                queue.append(dependent)
        queue.sort()
    if len(order) != len(enabled):
        raise UsageError(MSG_ORDER_CYCLE)
    return order


__all__ = [
    "base_copy",
    "deep_merge_map",
    "deployment_order",
    "merge_component_ref",
    "merge_mixins",
    "merge_phase",
    "merge_spec",
    "validate_dependencies",
]
