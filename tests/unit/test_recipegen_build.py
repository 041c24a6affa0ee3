"""Recipe generation: loading the tree, matching, leaves, the OS guard, chains,
snapshot-aware exclusion, registry defaults and the finished document."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.snapshot import parse_snapshot
from aicr_pytest.recipegen import criteria as crit
from aicr_pytest.recipegen.build import Evaluation, generate, matching_leaves
from aicr_pytest.recipegen.detect import detect_criteria, gpu_sku, provider_service, snapshot_evaluator
from aicr_pytest.recipegen.spec import Constraint, OverlayCriteria
from aicr_pytest.recipegen.store import load_store

REGISTRY = """\
kind: ComponentRegistry
components:
  - name: gpu-operator
    helm: {defaultRepository: https://charts.example/nvidia, defaultChart: nvidia/gpu-operator,
      defaultNamespace: gpu-operator, defaultVersion: v1.0.0}
  - {name: kust, kustomize: {defaultSource: https://git.example/k, defaultPath: deploy, defaultTag: v2}}
  - {name: checked, helm: {defaultRepository: https://charts.example, defaultVersion: "1"},
     healthCheck: {assertFile: checks/checked/health-check.yaml}}
"""
BASE = """\
kind: RecipeMetadata
metadata: {name: base}
spec:
  constraints: [{name: K8s.server.version, value: ">= 1.25"}]
  componentRefs:
    - {name: gpu-operator}
"""


def overlay(name: str, criteria: dict[str, Any] | None, base: str = "", **spec: Any) -> str:
    import yaml

    body: dict[str, Any] = {"base": base} if base else {}
    if criteria is not None:
        body["criteria"] = criteria
    body.update(spec)
    return yaml.safe_dump(
        {"kind": "RecipeMetadata", "metadata": {"name": name}, "spec": body}, sort_keys=False
    )


def make_tree(tmp_path: Path, files: dict[str, str], *, base: str = BASE) -> DataTree:
    root = tmp_path / "data"
    for rel, text in {"registry.yaml": REGISTRY, "overlays/base.yaml": base, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return DataTree(root)


def run(tree: DataTree, evaluate: Any = None, **query: Any) -> dict[str, Any]:
    store = load_store(tree)
    return generate(store, tree, crit.build(store.registry, None, **query), evaluate).document


# --- criteria ------------------------------------------------------------------------------------------

PARSE_CASES = [
    ("service", "EKS", "eks"),
    ("service", " self-managed ", "any"),
    ("service", "self", "any"),
    ("service", "vanilla", "any"),
    ("service", "openshift", "ocp"),
    ("service", "", "any"),
    ("os", "al2023", "amazonlinux"),
    ("os", "AL2", "amazonlinux"),
    ("accelerator", "RTX-PRO-6000", "rtx-pro-6000"),
    ("intent", "any", "any"),
    ("platform", "Dynamo", "dynamo"),
]


@pytest.mark.parametrize(("field", "value", "parsed"), PARSE_CASES)
def test_criteria_parse_aliases(field: crit.Field, value: str, parsed: str) -> None:
    assert crit.CriteriaRegistry().parse(field, value) == parsed


@pytest.mark.parametrize("field", crit.FIELDS)
def test_criteria_parse_unknown_value(field: crit.Field) -> None:
    with pytest.raises(UsageError) as exc:
        crit.CriteriaRegistry().parse(field, "Bogus")
    valid = ", ".join(["any", *crit.STATIC_VALUES[field]])
    assert str(exc.value) == f"invalid {field} type: Bogus (valid: {valid})"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("service", "rke2"),
        ("service", "K0s"),
        ("service", "generic"),
        ("service", "lke"),
        ("service", "bcm"),
        ("accelerator", "gb300"),
        ("accelerator", "VR200"),
        ("accelerator", "rtx-pro-6000"),
        ("platform", "nim"),
        ("platform", "slurm"),
    ],
)
def test_aicr_mains_criteria_values_are_known(field: crit.Field, value: str) -> None:
    assert crit.CriteriaRegistry().parse(field, value) == value.lower()


def test_an_unknown_value_lists_the_values_overlays_add() -> None:
    reg = crit.CriteriaRegistry()
    reg.register(OverlayCriteria(service="ncp-internal"))
    with pytest.raises(
        UsageError, match=r"\(valid: any, aks, .*, lke, metal3, ncp-internal, ocp, oke, rke2\)$"
    ):
        reg.parse("service", "nope")


def test_values_declared_by_overlays_become_valid_input() -> None:
    reg = crit.CriteriaRegistry()
    reg.register(OverlayCriteria(service="NCP-Internal", platform="nvmesh"))
    assert reg.parse("service", "ncp-internal") == "ncp-internal"
    assert reg.parse("platform", "NVMESH") == "nvmesh"
    assert "ncp-internal" in reg.values("service")


def test_negative_nodes() -> None:
    with pytest.raises(UsageError) as exc:
        crit.build(crit.CriteriaRegistry(), None, nodes=-1)
    assert str(exc.value) == "invalid nodes count: -1 (must be >= 0)"


MATCH_CASES = [
    # (overlay criteria, query, matches?)
    ({}, {}, True),
    ({"intent": "any"}, {"service": "eks", "intent": "training"}, True),
    ({"service": "any", "accelerator": "h100"}, {"service": "eks", "accelerator": "h100"}, True),
    ({"service": "eks"}, {}, False),  # a specific overlay value never matches a query any
    ({"service": "eks"}, {"service": "gke"}, False),
    ({"service": "eks", "os": "ubuntu"}, {"service": "eks"}, False),
    ({"service": "eks", "os": "ubuntu"}, {"service": "eks", "os": "ubuntu"}, True),
    ({"nodes": 4}, {"nodes": 0}, False),
    ({"nodes": 4}, {"nodes": 8}, False),
    ({"nodes": 4}, {"nodes": 4}, True),
    ({"nodes": 0}, {"nodes": 8}, True),
]


@pytest.mark.parametrize(("oc", "query", "expected"), MATCH_CASES)
def test_matching(oc: dict[str, Any], query: dict[str, Any], expected: bool) -> None:
    q = crit.Criteria(**query)
    assert crit.matches(OverlayCriteria(**oc), q) is expected


def test_overlay_values_are_not_normalized_when_matching() -> None:
    assert not crit.matches(OverlayCriteria(service="EKS"), crit.Criteria(service="eks"))


@pytest.mark.parametrize(
    ("oc", "score"),
    [
        ({}, 0),
        ({"service": "any", "accelerator": "h100"}, 1),
        ({"service": "eks", "os": "ubuntu", "nodes": 2}, 3),
    ],
)
def test_specificity(oc: dict[str, Any], score: int) -> None:
    assert crit.specificity(OverlayCriteria(**oc)) == score


# --- loading the tree ----------------------------------------------------------------------------------


def test_walk_rules(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path,
        {
            "overlays/eks.yaml": overlay("eks", {"service": "eks"}),
            "checks/eks/health-check.yaml": overlay("from-checks", {"service": "eks"}),
            "components/gpu-operator/values-x.yaml": overlay("from-components", {"service": "eks"}),
            "validators/catalog.yaml": "kind: ValidatorCatalog\nvalidators: []\n",
            "examples/recipe.yaml": "kind: RecipeResult\nmetadata: {name: r}\n",
            "overlays/notes.txt": "not yaml",
            "data-v1.yaml": overlay("legacy", {"service": "eks"}),
            "elsewhere/extra.yaml": overlay("extra", {"service": "gke"}),
        },
    )
    store = load_store(tree)
    assert sorted(store.overlays) == ["eks", "extra"]
    assert store.base.name == "base"
    assert "gke" in store.registry.values("service")


def test_later_overlay_with_the_same_name_replaces_the_earlier(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path,
        {
            "overlays/a.yaml": overlay("dup", {"service": "eks"}, constraints=[{"name": "x", "value": "1"}]),
            "overlays/b.yaml": overlay("dup", {"service": "eks"}, constraints=[{"name": "x", "value": "2"}]),
        },
    )
    assert load_store(tree).overlays["dup"].spec.constraints == [Constraint("x", "2")]


STORE_ERRORS = [
    (
        "mixin with an unknown field",
        {"mixins/m.yaml": "kind: RecipeMixin\nmetadata: {name: m}\nspec: {constraints: [], extra: 1}\n"},
        "failed to parse mixin mixins/m.yaml (unknown fields are not allowed): spec: field extra "
        "not found in type",
    ),
    (
        "mixin component with an unknown field",
        {
            "mixins/m.yaml": "kind: RecipeMixin\nmetadata: {name: m}\nspec: {componentRefs: [{name: "
            "a, bogus: 1}]}\n"
        },
        "failed to parse mixin mixins/m.yaml (unknown fields are not allowed): "
        "spec.componentRefs[0]: field bogus not found in type",
    ),
    (
        "mixin of the wrong kind",
        {"mixins/m.yaml": "kind: RecipeMetadata\nmetadata: {name: m}\n"},
        'mixin file mixins/m.yaml has wrong kind "RecipeMetadata", expected "RecipeMixin"',
    ),
    (
        "duplicate mixin names",
        {
            "mixins/a.yaml": "kind: RecipeMixin\nmetadata: {name: m}\n",
            "mixins/b.yaml": "kind: RecipeMixin\nmetadata: {name: m}\n",
        },
        'duplicate mixin name "m" in mixins/b.yaml',
    ),
    (
        "overlay field of the wrong shape",
        {
            "overlays/bad.yaml": "kind: RecipeMetadata\nmetadata: {name: bad}\nspec: "
            "{componentRefs: {name: a}}\n"
        },
        "failed to parse overlays/bad.yaml: spec.componentRefs: expected a list, got a mapping",
    ),
    (
        "a non-boolean flag",
        {"overlays/bad.yaml": "metadata: {name: bad}\nspec: {componentRefs: [{name: a, cleanup: maybe}]}\n"},
        "failed to parse overlays/bad.yaml: spec.componentRefs[0].cleanup: expected true or false, "
        "got 'maybe'",
    ),
    (
        "a non-integer nodes",
        {"overlays/bad.yaml": "metadata: {name: bad}\nspec: {criteria: {nodes: four}}\n"},
        "failed to parse overlays/bad.yaml: spec.criteria.nodes: expected an integer, got 'four'",
    ),
]


@pytest.mark.parametrize(("case", "files", "message"), STORE_ERRORS, ids=[c[0] for c in STORE_ERRORS])
def test_store_errors(tmp_path: Path, case: str, files: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError) as exc:
        load_store(make_tree(tmp_path, files))
    assert str(exc.value) == message


def test_malformed_overlay_yaml_is_one_line_with_the_line_number(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        load_store(make_tree(tmp_path, {"overlays/bad.yaml": "spec: [unclosed\n"}))
    text = str(exc.value)
    assert text.startswith("failed to parse overlays/bad.yaml: while parsing a flow sequence")
    assert text.endswith("(line 2)") and "\n" not in text


def test_missing_base(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (root / "registry.yaml").write_text(REGISTRY)
    with pytest.raises(UsageError) as exc:
        load_store(DataTree(root))
    assert str(exc.value) == "base.yaml not found (the data tree needs overlays/base.yaml)"


def test_base_with_an_unknown_dependency(tmp_path: Path) -> None:
    base = (
        "kind: RecipeMetadata\nmetadata: {name: base}\n"
        "spec: {componentRefs: [{name: a, dependencyRefs: [b]}]}\n"
    )
    with pytest.raises(UsageError) as exc:
        load_store(make_tree(tmp_path, {}, base=base))
    assert str(exc.value) == 'base recipe validation failed: component "a" references unknown dependency "b"'


def test_scalars_keep_their_source_text(tmp_path: Path) -> None:
    text = "metadata: {name: t}\nspec:\n  criteria: {service: eks}\n  componentRefs:\n"
    text += "    - {name: gpu-operator, version: 1.10, overrides: {replicas: 2, on: yes, ratio: 1.10}}\n"
    tree = make_tree(tmp_path, {"overlays/t.yaml": text})
    doc = run(tree, service="eks")
    gpu = doc["componentRefs"][0]
    assert gpu["version"] == "1.10"  # a Go string field keeps the text
    assert gpu["overrides"] == {
        "on": "yes",
        "ratio": 1.1,
        "replicas": 2,
    }  # map[string]any keeps YAML 1.2 types


# --- --data layering ------------------------------------------------------------------------------------


def _layered(tmp_path: Path) -> DataTree:
    emb = make_tree(
        tmp_path / "emb",
        {
            "overlays/eks.yaml": overlay(
                "eks", {"service": "eks"}, constraints=[{"name": "e", "value": "embedded"}]
            )
        },
    )
    ext = tmp_path / "ext"
    for rel, text in {
        "registry.yaml": "components:\n  - {name: extra, helm: {defaultRepository: https://x, "
        "defaultVersion: '3'}}\n",
        # same path: replaces the embedded overlay
        "overlays/eks.yaml": overlay(
            "eks", {"service": "eks"}, constraints=[{"name": "e", "value": "external"}]
        ),
        # same name as an embedded overlay at another path: the embedded file wins (walked later)
        "private/gke.yaml": overlay(
            "gke-any", {"service": "gke"}, constraints=[{"name": "g", "value": "external"}]
        ),
        # a new private service
        "overlays/mycloud.yaml": overlay(
            "mycloud", {"service": "mycloud"}, componentRefs=[{"name": "extra"}]
        ),
    }.items():
        path = ext / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    emb_root = emb.embedded_root
    (emb_root / "overlays/gke.yaml").write_text(
        overlay("gke-any", {"service": "gke"}, constraints=[{"name": "g", "value": "embedded"}])
    )
    return DataTree(emb_root, ext)


def test_data_layering(tmp_path: Path) -> None:
    tree = _layered(tmp_path)
    constraints = {c["name"]: c["value"] for c in run(tree, service="eks")["constraints"]}
    assert constraints["e"] == "external"
    constraints = {c["name"]: c["value"] for c in run(tree, service="gke")["constraints"]}
    assert constraints["g"] == "embedded"
    doc = run(tree, service="mycloud")
    extra = next(r for r in doc["componentRefs"] if r["name"] == "extra")
    assert (extra["source"], extra["version"]) == ("https://x", "3")  # merged registry


# --- the algorithm -------------------------------------------------------------------------------------


def _chains(tmp_path: Path) -> DataTree:
    return make_tree(
        tmp_path,
        {
            "overlays/any.yaml": overlay(
                "every",
                {"intent": "any"},
                componentRefs=[{"name": "every", "type": "Helm", "version": "1", "source": "s"}],
            ),
            "overlays/eks.yaml": overlay(
                "eks", {"service": "eks"}, constraints=[{"name": "K8s.server.version", "value": ">= 1.28"}]
            ),
            "overlays/eks-training.yaml": overlay(
                "eks-training",
                {"service": "eks", "intent": "training"},
                base="eks",
                constraints=[{"name": "K8s.server.version", "value": ">= 1.30"}],
            ),
            "overlays/h100-eks-training.yaml": overlay(
                "h100-eks-training",
                {"service": "eks", "accelerator": "h100", "intent": "training"},
                base="eks-training",
                constraints=[{"name": "K8s.server.version", "value": ">= 1.32.4"}],
                mixins=["os"],
            ),
            "overlays/h100-any.yaml": overlay("h100-any", {"service": "any", "accelerator": "h100"}),
            "overlays/eks-ubuntu.yaml": overlay(
                "eks-ubuntu", {"service": "eks", "os": "ubuntu"}, base="eks", mixins=["os"]
            ),
            "overlays/gke-cos.yaml": overlay("gke-cos", {"service": "gke", "os": "cos"}),
            "overlays/gke-cos-h100.yaml": overlay(
                "gke-cos-h100", {"service": "gke", "os": "cos", "accelerator": "h100"}, base="gke-cos"
            ),
            "mixins/os.yaml": "kind: RecipeMixin\nmetadata: {name: os}\nspec: {constraints: [{name: "
            "OS.release.ID, value: ubuntu}]}\n",
        },
    )


def test_maximal_leaves_in_specificity_order(tmp_path: Path) -> None:
    store = load_store(_chains(tmp_path))
    leaves = matching_leaves(
        store, crit.Criteria(service="eks", accelerator="h100", intent="training", os="ubuntu")
    )
    assert [o.name for o in leaves] == ["every", "h100-any", "eks-ubuntu", "h100-eks-training"]


def test_chains_merge_root_to_leaf_each_overlay_once(tmp_path: Path) -> None:
    doc = run(_chains(tmp_path), service="eks", accelerator="h100", intent="training", os="ubuntu")
    assert doc["metadata"]["appliedOverlays"] == [
        "base",
        "every",
        "h100-any",
        "eks",
        "eks-ubuntu",
        "eks-training",
        "h100-eks-training",
    ]
    # the most specific chain member wins; the mixin (pulled in twice) is merged once
    assert doc["constraints"] == [
        {"name": "K8s.server.version", "value": ">= 1.32.4"},
        {"name": "OS.release.ID", "value": "ubuntu"},
    ]
    assert doc["criteria"] == {
        "service": "eks",
        "accelerator": "h100",
        "intent": "training",
        "os": "ubuntu",
        "platform": "any",
    }


def test_os_guard(tmp_path: Path) -> None:
    tree = _chains(tmp_path)
    with pytest.raises(UsageError) as exc:
        run(tree, service="gke", accelerator="h100")
    assert (
        str(exc.value)
        == "service 'gke' has no OS-agnostic recipe for accelerator 'h100'; specify an OS (valid: cos)"
    )
    with pytest.raises(UsageError) as exc:
        run(tree, service="gke")
    assert (
        str(exc.value)
        == "service 'gke' has no OS-agnostic recipe for accelerator ''; specify an OS (valid: cos)"
    )
    assert (
        run(tree, service="gke", accelerator="h100", os="cos")["metadata"]["appliedOverlays"][-1]
        == "gke-cos-h100"
    )
    # eks has an OS-agnostic overlay for (eks, any accelerator): no guard
    assert run(tree, service="eks")["metadata"]["appliedOverlays"][-1] == "eks"


def test_base_only_is_a_warning_not_an_error(tmp_path: Path) -> None:
    tree = make_tree(tmp_path, {})
    store = load_store(tree)
    result = generate(store, tree, crit.build(store.registry, None, service="kind"))
    assert result.applied == ["base"]
    assert result.warnings == [
        "no environment-specific overlays matched, using base configuration only (service=kind)"
    ]


CHAIN_ERRORS = [
    (
        "cycle above the leaf",
        {
            "overlays/leaf.yaml": overlay("leaf", {"service": "eks"}, base="a"),
            "overlays/a.yaml": overlay("a", None, base="b"),
            "overlays/b.yaml": overlay("b", None, base="a"),
        },
        'failed to resolve inheritance chain of overlay "leaf": circular inheritance detected: '
        'recipe "a" references '
        "itself in inheritance chain",
    ),
    (
        "missing parent",
        {"overlays/a.yaml": overlay("a", {"service": "eks"}, base="ghost")},
        'failed to resolve inheritance chain of overlay "a": recipe "ghost" not found (referenced '
        "in inheritance chain)",
    ),
    (
        "merged dependencies",
        {
            "overlays/a.yaml": overlay(
                "a", {"service": "eks"}, componentRefs=[{"name": "x", "dependencyRefs": ["nope"]}]
            )
        },
        'merged recipe validation failed: component "x" references unknown dependency "nope"',
    ),
    (
        "unknown mixin",
        {"overlays/a.yaml": overlay("a", {"service": "eks"}, mixins=["ghost"])},
        'mixin "ghost" not found in recipes/mixins/',
    ),
    (
        "incoherent component",
        {
            "overlays/a.yaml": overlay(
                "a", {"service": "eks"}, componentRefs=[{"name": "x", "type": "Helm", "source": "https://s"}]
            )
        },
        'recipe has incoherent component ref(s): Helm component "x" has no chart version; set '
        "version: on the "
        "componentRef",
    ),
    (
        "reserved name",
        {
            "overlays/a.yaml": overlay(
                "a", {"service": "eks"}, componentRefs=[{"name": "deployer", "version": "1"}]
            )
        },
        'component name "deployer" is reserved (overlay data declares a component called "deployer")',
    ),
]


@pytest.mark.parametrize(("case", "files", "message"), CHAIN_ERRORS, ids=[c[0] for c in CHAIN_ERRORS])
def test_generation_errors(tmp_path: Path, case: str, files: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError) as exc:
        run(make_tree(tmp_path, files), service="eks")
    assert str(exc.value) == message


COHERENCE = [
    (
        {"name": "a", "type": "Helm", "version": "1", "source": "s", "tag": "t"},
        'component "a" is Helm but carries Kustomize field(s)',
    ),
    (
        {"name": "a", "type": "Helm", "chart": "c"},
        'Helm component "a" has a chart name ("c") but no source repository',
    ),
    ({"name": "a", "type": "Helm"}, 'Helm component "a" has no deployable primary'),
    (
        {"name": "a", "type": "Helm", "source": "s", "version": "v"},
        'Helm component "a" has chart version "v"',
    ),
    (
        {"name": "a", "type": "Helm", "source": " s", "version": "1"},
        'Helm component "a" has a source with surrounding whitespace',
    ),
    ({"name": "a", "type": "Kustomize", "source": "s"}, 'component "a" is Kustomize but has no path'),
    (
        {"name": "a", "type": "Kustomize", "path": "p", "tag": "t"},
        'component "a" is Kustomize with tag "t" but no source',
    ),
    (
        {"name": "a", "type": "Kustomize", "path": "p", "manifestFiles": ["m"]},
        'component "a" is Kustomize but also declares manifestFiles',
    ),
    ({"name": "a", "type": "Chart"}, 'component "a" has unsupported type "Chart"'),
    (
        {"name": "a", "type": "helm", "source": "s", "version": "1", "patches": ["p"]},
        'component "a" declares patches',
    ),
]


@pytest.mark.parametrize(("ref", "problem"), COHERENCE)
def test_coherence(tmp_path: Path, ref: dict[str, Any], problem: str) -> None:
    tree = make_tree(tmp_path, {"overlays/a.yaml": overlay("a", {"service": "eks"}, componentRefs=[ref])})
    with pytest.raises(UsageError) as exc:
        run(tree, service="eks")
    assert str(exc.value).startswith(f"recipe has incoherent component ref(s): {problem}")


def test_disabled_components_skip_coherence_and_ordering(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path,
        {
            "overlays/a.yaml": overlay(
                "a",
                {"service": "eks"},
                componentRefs=[{"name": "odd", "type": "Chart", "overrides": {"enabled": False}}],
            )
        },
    )
    doc = run(tree, service="eks")
    assert "odd" in [r["name"] for r in doc["componentRefs"]]
    assert doc["deploymentOrder"] == ["gpu-operator"]


def test_registry_defaults_and_health_check_hydration(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path,
        {
            "checks/checked/health-check.yaml": "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\n",
            "overlays/a.yaml": overlay(
                "a",
                {"service": "eks"},
                componentRefs=[
                    {"name": "kust"},
                    {"name": "checked"},
                    {"name": "gpu-operator", "type": "helm", "namespace": "custom"},
                ],
            ),
        },
    )
    refs = {r["name"]: r for r in run(tree, service="eks")["componentRefs"]}
    assert refs["gpu-operator"] == {
        "name": "gpu-operator",
        "namespace": "custom",
        "chart": "gpu-operator",  # basename of the registry's defaultChart
        "type": "Helm",  # canonicalized
        "source": "https://charts.example/nvidia",
        "version": "v1.0.0",
    }
    assert refs["kust"] == {
        "name": "kust",
        "type": "Kustomize",
        "source": "https://git.example/k",
        "tag": "v2",
        "path": "deploy",
    }
    assert refs["checked"]["healthCheckAsserts"] == "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\n"


def test_health_check_skip_and_inline_asserts_win(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path,
        {
            "checks/checked/health-check.yaml": "from: registry\n",
            "overlays/a.yaml": overlay(
                "a", {"service": "eks"}, componentRefs=[{"name": "checked", "healthCheckSkip": True}]
            ),
            "overlays/b.yaml": overlay(
                "b", {"service": "gke"}, componentRefs=[{"name": "checked", "healthCheckAsserts": "inline\n"}]
            ),
        },
    )
    assert "healthCheckAsserts" not in run(tree, service="eks")["componentRefs"][0]
    assert run(tree, service="gke")["componentRefs"][0]["healthCheckAsserts"] == "inline\n"


def test_missing_assert_file(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path, {"overlays/a.yaml": overlay("a", {"service": "eks"}, componentRefs=[{"name": "checked"}])}
    )
    with pytest.raises(UsageError) as exc:
        run(tree, service="eks")
    assert str(exc.value).startswith(
        'failed to read healthCheck.assertFile for component "checked" from '
        '"checks/checked/health-check.yaml"'
    )


def test_document_shape_and_order(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path,
        {
            "overlays/a.yaml": overlay(
                "a",
                {"service": "eks"},
                componentRefs=[{"name": "gpu-operator", "overrides": {"z": 1, "a": {"y": 1, "b": 2}}}],
                validation={"performance": {"checks": ["nccl-all-reduce-bw"]}, "deployment": {"checks": []}},
            )
        },
    )
    doc = run(tree, service="eks", nodes=4)
    assert list(doc) == [
        "kind",
        "apiVersion",
        "metadata",
        "criteria",
        "constraints",
        "componentRefs",
        "deploymentOrder",
        "validation",
    ]
    assert doc["criteria"]["nodes"] == 4
    assert list(doc["componentRefs"][0]) == [
        "name",
        "namespace",
        "chart",
        "type",
        "source",
        "version",
        "overrides",
    ]
    assert list(doc["componentRefs"][0]["overrides"]) == ["a", "z"] and list(
        doc["componentRefs"][0]["overrides"]["a"]
    ) == ["b", "y"]
    assert list(doc["validation"]) == ["deployment", "performance"]
    assert doc["validation"]["deployment"] == {}


# --- snapshot-aware generation -------------------------------------------------------------------------


def _snapshot(**k8s: str) -> Any:
    return parse_snapshot(
        {
            "measurements": [
                {
                    "type": "K8s",
                    "subtypes": [{"subtype": "server", "data": {"version": k8s.get("version", "v1.33.0")}}],
                },
                {"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": k8s.get("os", "ubuntu")}}]},
            ]
        },
        "snap.yaml",
    )


def test_leaf_with_a_failing_own_constraint_is_excluded(tmp_path: Path) -> None:
    tree = _chains(tmp_path)
    evaluate = snapshot_evaluator(_snapshot(version="v1.31.2"))
    doc = run(tree, evaluate, service="eks", accelerator="h100", intent="training")
    meta = doc["metadata"]
    assert meta["excludedOverlays"] == [{"name": "h100-eks-training", "reason": "constraint-failed"}]
    assert meta["constraintWarnings"] == [
        {
            "overlay": "h100-eks-training",
            "constraint": "K8s.server.version",
            "expected": ">= 1.32.4",
            "actual": "v1.31.2",
            "reason": "expected >= 1.32.4, got v1.31.2",
        }
    ]
    assert (
        "h100-eks-training" not in meta["appliedOverlays"] and "eks-training" not in meta["appliedOverlays"]
    )


def test_unevaluable_constraint_excludes_with_the_error_as_reason(tmp_path: Path) -> None:
    tree = _chains(tmp_path)
    snap = parse_snapshot(
        {"measurements": [{"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": "ubuntu"}}]}]},
        "s",
    )
    doc = run(tree, snapshot_evaluator(snap), service="eks", accelerator="h100", intent="training")
    warning = doc["metadata"]["constraintWarnings"][0]
    assert warning["overlay"] == "h100-eks-training" and "actual" not in warning
    assert warning["reason"].startswith("value not found in snapshot")


def test_failing_mixin_constraint_drops_the_chains_that_pull_it_in(tmp_path: Path) -> None:
    tree = _chains(tmp_path)
    evaluate = snapshot_evaluator(_snapshot(version="v1.33.0", os="rhel"))
    doc = run(tree, evaluate, service="eks", accelerator="h100", intent="training", os="ubuntu")
    meta = doc["metadata"]
    assert meta["excludedOverlays"] == [
        {"name": "eks-ubuntu", "reason": "mixin-constraint-failed"},
        {"name": "h100-eks-training", "reason": "mixin-constraint-failed"},
    ]
    assert [w["reason"] for w in meta["constraintWarnings"]] == [
        "mixin-constraint-failed: expected ubuntu, got rhel"
    ] * 2
    # rebuilt from the surviving leaves; independent overlays stay
    assert meta["appliedOverlays"] == ["base", "every", "h100-any"]
    assert "OS.release.ID" not in [c["name"] for c in doc["constraints"]]


def test_passing_snapshot_changes_nothing_but_adds_no_exclusions(tmp_path: Path) -> None:
    tree = _chains(tmp_path)
    q = {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu"}
    with_snap = run(tree, snapshot_evaluator(_snapshot(version="v1.33.0")), **q)
    without = run(tree, **q)
    assert with_snap == without and "excludedOverlays" not in with_snap["metadata"]


def test_evaluator_protocol_is_pluggable(tmp_path: Path) -> None:
    seen: list[str] = []

    def evaluate(c: Constraint) -> Evaluation:
        seen.append(c.name)
        return Evaluation(passed=True, actual="x")

    run(_chains(tmp_path), evaluate, service="eks", accelerator="h100", intent="training", os="ubuntu")
    assert seen == ["K8s.server.version", "OS.release.ID"]


# --- criteria from a snapshot --------------------------------------------------------------------------


def _topology_snapshot(**parts: Any) -> Any:
    measurements = []
    if "provider" in parts:
        measurements.append(
            {"type": "K8s", "subtypes": [{"subtype": "node", "data": {"provider": parts["provider"]}}]}
        )
    if "model" in parts:
        measurements.append(
            {"type": "GPU", "subtypes": [{"subtype": "hardware", "data": {"model": parts["model"]}}]}
        )
    if "os" in parts:
        measurements.append({"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": parts["os"]}}]})
    topo = []
    if "labels" in parts:
        topo.append({"subtype": "label", "data": parts["labels"]})
    if "nodes" in parts:
        topo.append({"subtype": "summary", "data": {"node-count": parts["nodes"]}})
    if topo:
        measurements.append({"type": "NodeTopology", "subtypes": topo})
    return parse_snapshot({"measurements": measurements}, "s")


DETECT_CASES = [
    (
        {"provider": "eks", "os": "ubuntu", "model": "h100", "nodes": 5},
        {"service": "eks", "accelerator": "h100", "os": "ubuntu", "nodes": 5},
    ),
    ({"provider": "ocid1.instance.oc1..x"}, {"service": "oke"}),
    ({"provider": "oci"}, {"service": "oke"}),
    ({"provider": "linode://123"}, {"service": "lke"}),
    ({"provider": "bare-metal-x"}, {}),
    ({"os": "amzn"}, {"os": "amazonlinux"}),
    ({"os": "RedHat"}, {"os": "rhel"}),
    ({"os": "debian"}, {}),
    ({"labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3|n1,n2"}}, {"accelerator": "h100"}),
    ({"labels": {"nvidia.com/gpu.product": "NVIDIA-GB200|n1"}, "model": "h100"}, {"accelerator": "gb200"}),
    ({"labels": {"nvidia.com/gpu.product": "Tesla-T4|n1"}, "model": "a100"}, {"accelerator": "a100"}),
    (
        {"labels": {"nvidia.com/gpu.product.A": "A|n1", "nvidia.com/gpu.product.B": "B|n2"}, "model": "h100"},
        {},
    ),
    ({"model": "t4"}, {}),
    ({"nodes": "many"}, {}),
]


@pytest.mark.parametrize(("parts", "expected"), DETECT_CASES)
def test_detect_criteria(parts: dict[str, Any], expected: dict[str, Any]) -> None:
    assert detect_criteria(_topology_snapshot(**parts), crit.CriteriaRegistry()) == crit.Criteria(**expected)


@pytest.mark.parametrize(
    ("product", "sku"),
    [
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("NVIDIA H200 NVL", "h200"),
        ("NVIDIA-GB300", "gb300"),
        ("NVIDIA RTX PRO 6000 Blackwell", "rtx-pro-6000"),
        ("NVIDIA-L40S", "l40s"),
        ("NVIDIA-L40", "l40"),
        ("NVIDIA-H1000", ""),
    ],
)
def test_gpu_sku(product: str, sku: str) -> None:
    assert gpu_sku(product) == sku


def test_provider_service_passthrough() -> None:
    assert provider_service("gke") == "gke"
