"""Recipe generation: the merge rules, mixins, dependencies and deploymentOrder."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.recipegen.merge import (
    deep_merge_map,
    deployment_order,
    merge_component_ref,
    merge_mixins,
    merge_phase,
    merge_spec,
    validate_dependencies,
)
from aicr_pytest.recipegen.spec import (
    ComponentRef,
    Constraint,
    ExpectedResource,
    Mixin,
    NodeSelection,
    Phase,
    Spec,
    Validation,
)


def ref(name: str = "c", **fields: Any) -> ComponentRef:
    return ComponentRef(name=name, **fields)


# --- componentRefs: one row per field rule ------------------------------------------------------------

COMPONENT_REF_CASES = [
    # (rule, base fields, overlay fields, expected fields of the result)
    (
        "string replaced when set",
        {"version": "1", "source": "s"},
        {"version": "2"},
        {"version": "2", "source": "s"},
    ),
    (
        "empty string inherits",
        {"namespace": "ns", "chart": "ch"},
        {"namespace": ""},
        {"namespace": "ns", "chart": "ch"},
    ),
    ("type replaced", {"type": "Helm"}, {"type": "Kustomize"}, {"type": "Kustomize"}),
    ("valuesFile replaced", {"values_file": "a.yaml"}, {"values_file": "b.yaml"}, {"values_file": "b.yaml"}),
    (
        "tag and path replaced",
        {"tag": "t1", "path": "p1"},
        {"tag": "t2", "path": "p2"},
        {"tag": "t2", "path": "p2"},
    ),
    (
        "overrides deep-merged, later wins",
        {"overrides": {"a": {"x": 1, "y": 2}, "keep": True}},
        {"overrides": {"a": {"y": 3, "z": 4}}},
        {"overrides": {"a": {"x": 1, "y": 3, "z": 4}, "keep": True}},
    ),
    (
        "null override kept as a value (it deletes at hydration)",
        {"overrides": {"a": {"x": 1}}},
        {"overrides": {"a": {"x": None}}},
        {"overrides": {"a": {"x": None}}},
    ),
    (
        "a list override replaces the list",
        {"overrides": {"l": [1, 2]}},
        {"overrides": {"l": [3]}},
        {"overrides": {"l": [3]}},
    ),
    ("overrides onto none", {}, {"overrides": {"a": 1}}, {"overrides": {"a": 1}}),
    (
        "dependencyRefs appended and de-duplicated",
        {"dependency_refs": ["a", "b"]},
        {"dependency_refs": ["b", "c"]},
        {"dependency_refs": ["a", "b", "c"]},
    ),
    (
        "manifestFiles appended and de-duplicated",
        {"manifest_files": ["m1"]},
        {"manifest_files": ["m1", "m2"]},
        {"manifest_files": ["m1", "m2"]},
    ),
    (
        "preManifestFiles appended and de-duplicated",
        {"pre_manifest_files": ["p1"]},
        {"pre_manifest_files": ["p2", "p1"]},
        {"pre_manifest_files": ["p1", "p2"]},
    ),
    ("patches replaced when set", {"patches": ["a"]}, {"patches": ["b"]}, {"patches": ["b"]}),
    ("patches inherited when empty", {"patches": ["a"]}, {}, {"patches": ["a"]}),
    (
        "expectedResources replaced when set",
        {"expected_resources": [ExpectedResource("Deployment", "a")]},
        {"expected_resources": [ExpectedResource("DaemonSet", "b", "ns")]},
        {"expected_resources": [ExpectedResource("DaemonSet", "b", "ns")]},
    ),
    ("cleanup is set-if-true", {"cleanup": True}, {"cleanup": False}, {"cleanup": True}),
    ("cleanup turned on", {}, {"cleanup": True}, {"cleanup": True}),
    ("healthCheckSkip is set-if-true", {"health_check_skip": True}, {}, {"health_check_skip": True}),
    (
        "healthCheckAsserts replaced",
        {"health_check_asserts": "a"},
        {"health_check_asserts": "b"},
        {"health_check_asserts": "b"},
    ),
]


@pytest.mark.parametrize(
    ("rule", "base", "overlay", "expected"), COMPONENT_REF_CASES, ids=[c[0] for c in COMPONENT_REF_CASES]
)
def test_merge_component_ref(
    rule: str, base: dict[str, Any], overlay: dict[str, Any], expected: dict[str, Any]
) -> None:
    b, o = ref(**base), ref(**overlay)
    merged = merge_component_ref(b, o)
    for key, value in expected.items():
        assert getattr(merged, key) == value, rule
    assert b == ref(**base), "the base ref is not modified"


def test_deep_merge_copies_instead_of_aliasing() -> None:
    src = {"a": {"b": [1]}}
    dst: dict[str, Any] = {}
    deep_merge_map(dst, src)
    dst["a"]["b"].append(2)
    assert src == {"a": {"b": [1]}}


# --- validation phases ---------------------------------------------------------------------------------

C = Constraint
PHASE_CASES = [
    ("overlay phase absent inherits", Phase(checks=["a"]), None, Phase(checks=["a"])),
    ("base phase absent takes the overlay", None, Phase(checks=["b"]), Phase(checks=["b"])),
    (
        "checks nil inherits",
        Phase(checks=["a"]),
        Phase(checks=None, timeout="5m"),
        Phase(checks=["a"], timeout="5m"),
    ),
    ("explicit [] clears checks", Phase(checks=["a", "b"]), Phase(checks=[]), Phase(checks=[])),
    (
        "checks union keeps base order",
        Phase(checks=["a", "b"]),
        Phase(checks=["c", "a"]),
        Phase(checks=["a", "b", "c"]),
    ),
    (
        "constraints: overlay replaces in place, new ones appended",
        Phase(constraints=[C("x", "1"), C("y", "2")]),
        Phase(constraints=[C("z", "3"), C("x", "9")]),
        Phase(constraints=[C("x", "9"), C("y", "2"), C("z", "3")]),
    ),
    (
        "explicit [] clears constraints",
        Phase(constraints=[C("x", "1")]),
        Phase(constraints=[]),
        Phase(constraints=[]),
    ),
    (
        "constraints nil inherits",
        Phase(constraints=[C("x", "1")]),
        Phase(checks=["a"]),
        Phase(constraints=[C("x", "1")], checks=["a"]),
    ),
    (
        "duplicate names inside the overlay: the last wins",
        Phase(constraints=[C("x", "1")]),
        Phase(constraints=[C("x", "2"), C("x", "3")]),
        Phase(constraints=[C("x", "3")]),
    ),
    ("timeout replaced when set", Phase(timeout="1m"), Phase(timeout="2m"), Phase(timeout="2m")),
    (
        "timeout inherited",
        Phase(timeout="1m", infrastructure="i"),
        Phase(),
        Phase(timeout="1m", infrastructure="i"),
    ),
    (
        "nodeSelection replaced when set",
        Phase(node_selection=NodeSelection(selector={"a": "1"}, max_nodes=2)),
        Phase(node_selection=NodeSelection(max_nodes=4)),
        Phase(node_selection=NodeSelection(max_nodes=4)),
    ),
    (
        "nodeSelection inherited",
        Phase(node_selection=NodeSelection(max_nodes=2)),
        Phase(checks=["a"]),
        Phase(node_selection=NodeSelection(max_nodes=2), checks=["a"]),
    ),
]


@pytest.mark.parametrize(
    ("rule", "base", "overlay", "expected"), PHASE_CASES, ids=[c[0] for c in PHASE_CASES]
)
def test_merge_phase(rule: str, base: Phase | None, overlay: Phase | None, expected: Phase) -> None:
    assert merge_phase(base, overlay) == expected, rule


# --- whole specs ---------------------------------------------------------------------------------------


def test_merge_spec_constraints_union_by_name_sorted_later_wins() -> None:
    spec = Spec(constraints=[C("b", "1"), C("a", "1")])
    merge_spec(spec, Spec(constraints=[C("c", "2"), C("b", "2", severity="warning")]))
    assert spec.constraints == [C("a", "1"), C("b", "2", severity="warning"), C("c", "2")]


def test_merge_spec_component_refs_union_sorted_and_merged() -> None:
    spec = Spec(component_refs=[ref("z", version="1"), ref("m", dependency_refs=["z"])])
    merge_spec(spec, Spec(component_refs=[ref("a"), ref("m", dependency_refs=["a"])]))
    assert [r.name for r in spec.component_refs] == ["a", "m", "z"]
    assert spec.component_refs[1].dependency_refs == ["z", "a"]


def test_merge_spec_validation_per_phase_and_mixins_accumulate() -> None:
    spec = Spec(mixins=["m1"], validation=Validation(deployment=Phase(checks=["d1"])))
    merge_spec(
        spec,
        Spec(
            mixins=["m2", "m1"],
            validation=Validation(deployment=Phase(checks=["d2"]), performance=Phase(checks=["p"])),
        ),
    )
    assert spec.mixins == ["m1", "m2"]
    assert spec.validation == Validation(
        deployment=Phase(checks=["d1", "d2"]), performance=Phase(checks=["p"])
    )


def test_merge_spec_validation_onto_none_is_copied() -> None:
    other = Spec(validation=Validation(conformance=Phase(checks=["x"])))
    spec = Spec()
    merge_spec(spec, other)
    assert spec.validation is not None and spec.validation.conformance is not None
    spec.validation.conformance.checks.append("y")  # type: ignore[union-attr]
    assert other.validation.conformance.checks == ["x"]  # type: ignore[union-attr]


# --- mixins --------------------------------------------------------------------------------------------


def mixin(
    name: str, constraints: list[Constraint] | None = None, refs: list[ComponentRef] | None = None
) -> Mixin:
    return Mixin(
        name=name, constraints=constraints or [], component_refs=refs or [], source=f"mixins/{name}.yaml"
    )


def test_mixins_merge_after_the_chain_and_the_list_is_dropped() -> None:
    spec = Spec(
        mixins=["os", "plat"],
        constraints=[C("K8s.server.version", ">= 1.30")],
        component_refs=[ref("gpu-operator", version="1")],
    )
    contributed = merge_mixins(
        spec,
        {
            "os": mixin("os", [C("OS.release.ID", "ubuntu")]),
            "plat": mixin("plat", refs=[ref("trainer", version="2"), ref("gpu-operator", namespace="other")]),
        },
    )
    assert contributed == {"OS.release.ID"}
    assert spec.mixins == []
    assert [c.name for c in spec.constraints] == ["K8s.server.version", "OS.release.ID"]
    gpu = next(r for r in spec.component_refs if r.name == "gpu-operator")
    assert (gpu.version, gpu.namespace) == ("1", "other")


MIXIN_ERRORS = [
    (
        "unknown mixin",
        Spec(mixins=["nope"]),
        {},
        'mixin "nope" not found in recipes/mixins/',
    ),
    (
        "constraint already in the chain",
        Spec(mixins=["m"], constraints=[C("OS.release.ID", "rhel")]),
        {"m": mixin("m", [C("OS.release.ID", "ubuntu")])},
        'mixin "m" constraint "OS.release.ID" conflicts with inheritance chain or another mixin',
    ),
    (
        "constraint from another mixin",
        Spec(mixins=["a", "b"]),
        {"a": mixin("a", [C("x", "1")]), "b": mixin("b", [C("x", "2")])},
        'mixin "b" constraint "x" conflicts with inheritance chain or another mixin',
    ),
    *[
        (
            f"existing component: {field} is an identity field",
            Spec(mixins=["m"], component_refs=[ref("gpu-operator")]),
            {"m": mixin("m", refs=[ref("gpu-operator", **{attr: value})])},
            f'mixin "m" component "gpu-operator" sets identity/sourcing field "{field}" which '
            f"conflicts with the "
            "inheritance chain; mixins may only contribute Namespace, ManifestFiles, or "
            "PreManifestFiles to an "
            "existing component",
        )
        for field, attr, value in [
            ("chart", "chart", "c"),
            ("type", "type", "Helm"),
            ("source", "source", "s"),
            ("version", "version", "1"),
            ("tag", "tag", "t"),
            ("path", "path", "p"),
            ("valuesFile", "values_file", "v.yaml"),
            ("overrides", "overrides", {"a": 1}),
            ("patches", "patches", ["p"]),
            ("dependencyRefs", "dependency_refs", ["x"]),
            ("cleanup", "cleanup", True),
            ("expectedResources", "expected_resources", [ExpectedResource("Deployment", "d")]),
            ("healthCheckAsserts", "health_check_asserts", "x"),
            ("healthCheckSkip", "health_check_skip", True),
        ]
    ],
]


@pytest.mark.parametrize(
    ("case", "spec", "mixins", "message"), MIXIN_ERRORS, ids=[c[0] for c in MIXIN_ERRORS]
)
def test_mixin_errors(case: str, spec: Spec, mixins: dict[str, Mixin], message: str) -> None:
    with pytest.raises(UsageError) as exc:
        merge_mixins(spec, mixins)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    "fields",
    [{"namespace": "ns"}, {"manifest_files": ["m.yaml"]}, {"pre_manifest_files": ["pre.yaml"]}],
)
def test_mixin_may_add_namespace_and_manifests_to_an_existing_component(fields: dict[str, Any]) -> None:
    spec = Spec(mixins=["m"], component_refs=[ref("c", version="1", manifest_files=["base.yaml"])])
    merge_mixins(spec, {"m": mixin("m", refs=[ref("c", **fields)])})
    merged = spec.component_refs[0]
    assert merged.version == "1"
    for key, value in fields.items():
        got = getattr(merged, key)
        assert got == (["base.yaml", *value] if key == "manifest_files" else value)


# --- dependencies and deploymentOrder -------------------------------------------------------------------


def test_unknown_dependency() -> None:
    with pytest.raises(UsageError) as exc:
        validate_dependencies([ref("a", dependency_refs=["ghost"])])
    assert str(exc.value) == 'component "a" references unknown dependency "ghost"'


def test_dependency_cycle_names_the_cycle() -> None:
    refs = [ref("a", dependency_refs=["b"]), ref("b", dependency_refs=["c"]), ref("c", dependency_refs=["a"])]
    with pytest.raises(UsageError) as exc:
        validate_dependencies(refs)
    assert str(exc.value) == "dependency validation failed: circular dependency detected: [a b c a]"


ORDER_CASES = [
    ("no edges: alphabetical", [ref("b"), ref("a"), ref("c")], ["a", "b", "c"]),
    (
        "the ready queue is re-sorted after every pop",
        [ref("z"), ref("y"), ref("a", dependency_refs=["y"])],
        ["y", "a", "z"],
    ),
    (
        "chain",
        [ref("c", dependency_refs=["b"]), ref("b", dependency_refs=["a"]), ref("a")],
        ["a", "b", "c"],
    ),
    (
        "disabled components are left out and their edges count as satisfied",
        [ref("cert", overrides={"enabled": False}), ref("app", dependency_refs=["cert"]), ref("x")],
        ["app", "x"],
    ),
    (
        "a non-bool enabled counts as enabled",
        [ref("a", overrides={"enabled": "no"})],
        ["a"],
    ),
]


@pytest.mark.parametrize(("case", "refs", "order"), ORDER_CASES, ids=[c[0] for c in ORDER_CASES])
def test_deployment_order(case: str, refs: list[ComponentRef], order: list[str]) -> None:
    assert deployment_order(refs) == order


def test_deployment_order_edge_to_undeclared_component_is_an_error() -> None:
    with pytest.raises(UsageError) as exc:
        deployment_order([ref("a", dependency_refs=["ghost"])])
    assert str(exc.value) == "cannot determine deployment order: circular dependencies exist"
