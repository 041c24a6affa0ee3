"""Recipe generation: criteria → ``RecipeResult``.

1. match every overlay's ``spec.criteria`` against the query;
2. keep the maximal leaves (drop every match that is an ancestor, via ``spec.base``, of another);
3. order them by specificity, then name;
4. the OS guard: a specific service without an OS, where only OS-gated overlays would match;
5. merge: a copy of ``base``, then each leaf's chain root → leaf, every overlay at most once;
6. merge the accumulated mixins;
7. finalize: dependencies, ``deploymentOrder``, type canonicalization, registry defaults and
   ``healthCheckAsserts``, coherence of the enabled components.

With a snapshot (:class:`Evaluator`), each matched leaf's own constraints are evaluated first and a
failing leaf is left out (``excludedOverlays`` / ``constraintWarnings``); after the mixins are merged
their constraints are evaluated too, and the chains that contributed a failing one are dropped and
the spec rebuilt from the surviving leaves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core.coherence import MSG_INCOHERENT, coherence_problem
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.version import __version__
from aicr_pytest.recipegen.criteria import ANY, Criteria, matches, specificity
from aicr_pytest.recipegen.merge import (
    base_copy,
    deployment_order,
    merge_mixins,
    merge_spec,
    validate_dependencies,
)
from aicr_pytest.recipegen.spec import (
    ComponentRef,
    Constraint,
    Overlay,
    Spec,
    encode_component_ref,
    encode_constraint,
    encode_validation,
)
from aicr_pytest.recipegen.store import BASE_NAME, OverlayStore

log = logging.getLogger("aicr_pytest.recipegen")

API_VERSION = "aicr.run/v1alpha2"
RESULT_KIND = "RecipeResult"
RESERVED_NAME = "deployer"
HELM, KUSTOMIZE = "Helm", "Kustomize"

# Messages quoted from AICR.
MSG_OS_GUARD = (
    "service '{service}' has no OS-agnostic recipe for accelerator '{accelerator}'; "
    "specify an OS (valid: {valid})"
)
MSG_CYCLE_CHAIN = 'circular inheritance detected: recipe "{name}" references itself in inheritance chain'
MSG_MISSING_PARENT = 'recipe "{name}" not found (referenced in inheritance chain)'
MSG_CHAIN = 'failed to resolve inheritance chain of overlay "{overlay}": {problem}'
MSG_MERGED_INVALID = "merged recipe validation failed: {problem}"
MSG_ASSERT_FILE = 'failed to read healthCheck.assertFile for component "{component}" from "{path}": {problem}'
MSG_RESERVED = 'component name "deployer" is reserved (overlay data declares a component called "deployer")'
MSG_BASE_ONLY = "no environment-specific overlays matched, using base configuration only ({criteria})"
MSG_ALL_EXCLUDED = (
    "all matching overlays were excluded due to constraint failures, "
    "using base configuration only ({criteria})"
)

MSG_MIXIN_OWNER = 'failed to map mixin constraint "{constraint}" to a candidate chain'


@dataclass(frozen=True)
class Evaluation:
    """One constraint evaluated against a snapshot: ``error`` set means it could not be evaluated."""

    passed: bool
    actual: str = ""
    error: str | None = None


#: ``evaluate(constraint) -> Evaluation`` (built from a snapshot by :mod:`.detect`).
Evaluator = Callable[[Constraint], Evaluation]


@dataclass
class Generated:
    """A generated recipe: the document plus the warnings to print."""

    document: dict[str, Any]
    applied: list[str]
    excluded: list[dict[str, str]] = field(default_factory=list)
    constraint_warnings: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------- candidates --


def matching_leaves(store: OverlayStore, query: Criteria) -> list[Overlay]:
    """Matched overlays minus ancestors of other matches, least specific first, ties by name."""
    matched = [
        o for o in store.overlays.values() if o.spec.criteria is not None and matches(o.spec.criteria, query)
    ]
    ancestors: set[str] = set()
    for overlay in matched:
        seen: set[str] = set()
        parent = overlay.spec.base
        while parent not in ("", BASE_NAME) and parent not in seen:
            seen.add(parent)
            ancestors.add(parent)
            found = store.overlays.get(parent)
            if found is None:
                break
            parent = found.spec.base
    leaves = [o for o in matched if o.name not in ancestors]
    return sorted(leaves, key=lambda o: (specificity(o.spec.criteria), o.name))  # type: ignore[arg-type]


def chain(store: OverlayStore, name: str) -> list[Overlay]:
    """``base`` → … → ``name`` following ``spec.base`` (empty means ``base``)."""
    out: list[Overlay] = []
    seen: set[str] = set()
    current = name
    while current not in ("", BASE_NAME):
        if current in seen:
            raise UsageError(MSG_CYCLE_CHAIN.format(name=current))
        seen.add(current)
        overlay = store.overlays.get(current)
        if overlay is None:
            raise UsageError(MSG_MISSING_PARENT.format(name=current))
        out.append(overlay)
        current = overlay.spec.base
    return [store.base, *reversed(out)]


def os_guard(store: OverlayStore, query: Criteria, leaves: Sequence[Overlay]) -> None:
    """A specific service with no OS: fail when only OS-gated overlays would cover it."""
    if query.service in ("", ANY) or query.os not in ("", ANY):
        return
    accelerator = "" if query.accelerator == ANY else query.accelerator
    for overlay in leaves:
        c = overlay.spec.criteria
        if c is None or c.service != query.service:
            continue
        if ("" if c.accelerator == ANY else c.accelerator) == accelerator:
            return
    available = sorted(
        {
            o.spec.criteria.os
            for o in store.overlays.values()
            if o.spec.criteria is not None
            and o.spec.criteria.os not in ("", ANY)
            and matches(o.spec.criteria, query.with_values(os=o.spec.criteria.os))
        }
    )
    if available:
        raise UsageError(
            MSG_OS_GUARD.format(service=query.service, accelerator=accelerator, valid=", ".join(available))
        )


def merge_chains(store: OverlayStore, leaves: Sequence[Overlay]) -> tuple[Spec, list[str]]:
    """A copy of base with every leaf's chain merged (each overlay once); plus the applied names."""
    spec = base_copy(store.base.spec)
    applied = [BASE_NAME]
    done: set[str] = set()
    for leaf in leaves:
        try:
            members = chain(store, leaf.name)
        except UsageError as exc:
            raise UsageError(MSG_CHAIN.format(overlay=leaf.name, problem=exc)) from None
        for overlay in members[1:]:
            if overlay.name in done:
                continue
            done.add(overlay.name)
            merge_spec(spec, overlay.spec)
            applied.append(overlay.name)
    return spec, applied


# ------------------------------------------------------------------------- snapshot awareness --


def _warning(overlay: str, c: Constraint, result: Evaluation, reason: str) -> dict[str, str]:
    w = {"overlay": overlay, "constraint": c.name, "expected": c.value}
    if result.actual:
        w["actual"] = result.actual
    w["reason"] = reason
    return w


def _own_constraint_warnings(overlay: Overlay, evaluate: Evaluator) -> list[dict[str, str]]:
    out = []
    for c in overlay.spec.constraints:
        result = evaluate(c)
        if result.error is not None:
            out.append(_warning(overlay.name, c, result, result.error))
        elif not result.passed:
            out.append(_warning(overlay.name, c, result, f"expected {c.value}, got {result.actual}"))
    return out


def _mixin_constraint_owners(store: OverlayStore, leaves: Sequence[Overlay]) -> dict[str, list[str]]:
    """Mixin constraint name → the leaves whose chains pull that mixin in."""
    owners: dict[str, list[str]] = {}
    for leaf in leaves:
        seen: set[str] = set()
        for member in chain(store, leaf.name):
            for mixin_name in member.spec.mixins:
                mixin = store.mixins.get(mixin_name)
                for c in mixin.constraints if mixin else []:
                    if c.name not in seen:
                        seen.add(c.name)
                        owners.setdefault(c.name, []).append(leaf.name)
    return owners


# ------------------------------------------------------------------------------------ finalize --


def _canonical_type(value: str) -> str:
    lowered = value.lower()
    return HELM if lowered == "helm" else KUSTOMIZE if lowered == "kustomize" else value


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _section(entry: dict[str, Any], key: str) -> dict[str, Any]:
    value = entry.get(key)
    return value if isinstance(value, dict) else {}


def apply_registry_defaults(
    data: DataTree, refs: list[ComponentRef], registry: dict[str, dict[str, Any]] | None = None
) -> None:
    """Fill empty fields from ``registry.yaml`` and hydrate ``healthCheckAsserts`` from its assertFile."""
    if registry is None:
        registry = {str(c.get("name")): c for c in data.registry()}
    for ref in refs:
        entry = registry.get(ref.name)
        if entry is None:
            continue
        helm, kustomize = _section(entry, "helm"), _section(entry, "kustomize")
        if not ref.type:
            ref.type = KUSTOMIZE if _text(kustomize.get("defaultSource")) else HELM
        if ref.type == HELM:
            ref.source = ref.source or _text(helm.get("defaultRepository"))
            ref.version = ref.version or _text(helm.get("defaultVersion"))
            ref.namespace = ref.namespace or _text(helm.get("defaultNamespace"))
            if not ref.chart and (chart := _text(helm.get("defaultChart"))):
                ref.chart = chart.rsplit("/", 1)[-1]
        elif ref.type == KUSTOMIZE:
            ref.source = ref.source or _text(kustomize.get("defaultSource"))
            ref.tag = ref.tag or _text(kustomize.get("defaultTag"))
            ref.path = ref.path or _text(kustomize.get("defaultPath"))
    for ref in refs:
        if ref.health_check_skip or ref.health_check_asserts:
            continue
        assert_file = _text(_section(registry.get(ref.name) or {}, "healthCheck").get("assertFile"))
        if not assert_file:
            continue
        try:
            ref.health_check_asserts = data.read_bytes(assert_file).decode("utf-8")
        except (UsageError, UnicodeDecodeError) as exc:
            raise UsageError(
                MSG_ASSERT_FILE.format(component=ref.name, path=assert_file, problem=exc)
            ) from None


def finalize(
    data: DataTree,
    query: Criteria,
    spec: Spec,
    applied: list[str],
    version: str = __version__,
    registry: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Validate and order the merged spec, apply registry defaults, and build the document."""
    if any(r.name == RESERVED_NAME for r in spec.component_refs):
        raise UsageError(MSG_RESERVED)
    try:
        validate_dependencies(spec.component_refs)
    except UsageError as exc:
        raise UsageError(MSG_MERGED_INVALID.format(problem=exc)) from None
    order = deployment_order(spec.component_refs)
    for ref in spec.component_refs:
        ref.type = _canonical_type(ref.type)
    apply_registry_defaults(data, spec.component_refs, registry)
    problems = sorted(p for r in spec.component_refs if r.enabled and (p := coherence_problem(r)))
    if problems:
        raise UsageError(MSG_INCOHERENT.format(problems="; ".join(problems)))
    metadata: dict[str, Any] = {"version": version} if version else {}
    if applied:
        metadata["appliedOverlays"] = list(applied)
    document: dict[str, Any] = {
        "kind": RESULT_KIND,
        "apiVersion": API_VERSION,
        "metadata": metadata,
        "criteria": query.to_dict(),
    }
    if spec.constraints:
        document["constraints"] = [encode_constraint(c) for c in spec.constraints]
    document["componentRefs"] = [encode_component_ref(r) for r in spec.component_refs]
    document["deploymentOrder"] = order
    validation = encode_validation(spec.validation)
    if validation is not None:
        document["validation"] = validation
    return document


# -------------------------------------------------------------------------------------- generate --


def generate(
    store: OverlayStore,
    data: DataTree,
    query: Criteria,
    evaluate: Evaluator | None = None,
    version: str = __version__,
) -> Generated:
    """Build the recipe for ``query``; with ``evaluate``, generation is snapshot-aware."""
    leaves = matching_leaves(store, query)
    os_guard(store, query, leaves)
    excluded: list[dict[str, str]] = []
    warnings: list[dict[str, str]] = []
    if evaluate is not None:
        kept = []
        for leaf in leaves:
            failed = _own_constraint_warnings(leaf, evaluate)
            if failed:
                excluded.append({"name": leaf.name, "reason": "constraint-failed"})
                warnings.extend(failed)
            else:
                kept.append(leaf)
        leaves = kept
    spec, applied = merge_chains(store, leaves)
    contributed = merge_mixins(spec, store.mixins)
    if evaluate is not None and contributed:
        owners = _mixin_constraint_owners(store, leaves)
        failing: set[str] = set()
        mixin_warnings: list[dict[str, str]] = []
        for c in spec.constraints:
            if c.name not in contributed:
                continue
            result = evaluate(c)
            if result.passed and result.error is None:
                continue
            reason = result.error if result.error is not None else f"expected {c.value}, got {result.actual}"
            if not owners.get(c.name):
                raise UsageError(MSG_MIXIN_OWNER.format(constraint=c.name))
            for leaf_name in owners[c.name]:
                failing.add(leaf_name)
                mixin_warnings.append(_warning(leaf_name, c, result, f"mixin-constraint-failed: {reason}"))
        if failing:
            excluded.extend(
                {"name": o.name, "reason": "mixin-constraint-failed"} for o in leaves if o.name in failing
            )
            warnings.extend(mixin_warnings)
            leaves = [o for o in leaves if o.name not in failing]
            spec, applied = merge_chains(store, leaves)
            merge_mixins(spec, store.mixins)
    notes: list[str] = []
    if len(applied) <= 1:
        template = MSG_ALL_EXCLUDED if excluded else MSG_BASE_ONLY
        notes.append(template.format(criteria=query.describe()))
    document = finalize(data, query, spec, applied, version, store.components)
    if evaluate is not None:
        if excluded:
            document["metadata"]["excludedOverlays"] = excluded
        if warnings:
            document["metadata"]["constraintWarnings"] = warnings
    return Generated(
        document=document, applied=applied, excluded=excluded, constraint_warnings=warnings, warnings=notes
    )


__all__ = [
    "API_VERSION",
    "RESULT_KIND",
    "Evaluation",
    "Evaluator",
    "Generated",
    "apply_registry_defaults",
    "chain",
    "coherence_problem",
    "finalize",
    "generate",
    "matching_leaves",
    "merge_chains",
    "os_guard",
]
