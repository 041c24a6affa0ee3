"""Recipe model: parsing, apiVersion/kind gates, helpers, YAML 1.2 scalars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.recipe import PHASES, Recipe, parse_recipe

EXAMPLES = Path(__file__).resolve().parents[2] / "recipes" / "examples"


def _doc(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "RecipeResult",
        "apiVersion": "aicr.run/v1alpha2",
        "criteria": {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu"},
        "constraints": [{"name": "K8s.server.version", "value": ">= 1.32"}],
        "componentRefs": [{"name": "gpu-operator", "namespace": "gpu-operator"}],
    }
    doc.update(extra)
    return doc


def parse(data: object, source: str = "r.yaml") -> Recipe:
    recipe, warnings = parse_recipe(data, source)
    assert warnings == []
    return recipe


def test_minimal_recipe_parses() -> None:
    r = parse(_doc())
    assert r.kind == "RecipeResult"
    assert r.constraints[0].name == "K8s.server.version"
    assert r.constraints[0].value == ">= 1.32"
    assert r.component("gpu-operator") is not None
    assert r.component("nope") is None
    assert r.source == "r.yaml"


@pytest.mark.parametrize("api", ["", None])
def test_empty_api_version_and_kind_accepted(api: str | None) -> None:
    doc = _doc(apiVersion=api, kind=api)
    r = parse(doc)
    assert r.api_version == ""


def test_legacy_api_version_warns() -> None:
    r, warnings = parse_recipe(_doc(apiVersion="aicr.nvidia.com/v1alpha1"), "old.yaml")
    assert warnings == [
        "recipe old.yaml: apiVersion aicr.nvidia.com/v1alpha1 is legacy (AICR rejects it); "
        "reading it as aicr.run/v1alpha2"
    ]
    assert r.component("gpu-operator") is not None


def test_unknown_api_version_rejected() -> None:
    with pytest.raises(UsageError) as exc:
        parse_recipe(_doc(apiVersion="aicr.run/v9"), "r.yaml")
    assert str(exc.value) == (
        'recipe file has apiVersion "aicr.run/v9", which this aicr build does not support '
        '(expected "aicr.run/v1alpha2"); regenerate the recipe with a matching aicr version'
    )


def test_wrong_kind_rejected() -> None:
    with pytest.raises(UsageError) as exc:
        parse_recipe(_doc(kind="Snapshot"), "r.yaml")
    assert str(exc.value) == (
        'recipe file has kind "Snapshot", but "RecipeResult" is required; '
        'run "aicr recipe" to generate a hydrated RecipeResult first'
    )


def test_overlay_kind_explained() -> None:
    with pytest.raises(UsageError, match=r"RecipeMetadata.*overlay"):
        parse_recipe(_doc(kind="RecipeMetadata"), "o.yaml")


@pytest.mark.parametrize(
    ("data", "what"),
    [([1, 2], "a list"), ("text", "a str scalar"), (3, "a int scalar"), (None, "an empty document")],
)
def test_non_mapping_rejected(data: object, what: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_recipe(data, "r.yaml")
    assert str(exc.value) == f"recipe r.yaml: expected a YAML mapping (a RecipeResult document), got {what}"


def test_constraint_without_value_names_the_field() -> None:
    with pytest.raises(UsageError) as exc:
        parse_recipe(_doc(constraints=[{"name": "K8s.server.version"}]), "r.yaml")
    assert str(exc.value) == "recipe r.yaml: constraints[0].value: required field is missing"


def test_phase_constraint_without_value_names_the_field() -> None:
    doc = _doc(validation={"performance": {"checks": ["x"], "constraints": [{"name": "nccl-all-reduce-bw"}]}})
    with pytest.raises(UsageError, match=r"validation\.performance\.constraints\[0\]\.value"):
        parse_recipe(doc, "r.yaml")


def test_malformed_field_one_line() -> None:
    with pytest.raises(UsageError) as exc:
        parse_recipe(_doc(componentRefs=[{"name": "a"}, {"namespace": "x"}], constraints="nope"), "r.yaml")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("recipe r.yaml: ")
    assert "more problem" in msg


def test_component_refs_not_a_list() -> None:
    with pytest.raises(UsageError, match=r"^recipe r\.yaml: componentRefs: "):
        parse_recipe(_doc(componentRefs={"name": "a"}), "r.yaml")


def test_reserved_deployer_name() -> None:
    with pytest.raises(UsageError, match='"deployer" is reserved'):
        parse_recipe(_doc(componentRefs=[{"name": "deployer"}]), "r.yaml")


def test_unknown_fields_ignored() -> None:
    doc = _doc(extra={"a": 1}, componentRefs=[{"name": "x", "futureField": [1, 2]}])
    doc["criteria"]["galaxy"] = "far"
    r = parse(doc)
    assert r.component("x") is not None


def test_numeric_scalars_become_text() -> None:
    doc = _doc(
        constraints=[{"name": "OS.release.VERSION_ID", "value": 24.04}, {"name": "n", "value": 256}],
        componentRefs=[{"name": "x", "version": 2}],
    )
    r = parse(doc)
    assert [c.value for c in r.constraints] == ["24.04", "256"]
    assert r.component_refs[0].version == "2"


def test_null_collections_are_empty() -> None:
    r = parse(
        _doc(constraints=None, componentRefs=None, deploymentOrder=None, validation=None, metadata=None)
    )
    assert r.constraints == [] and r.component_refs == [] and r.declared_phases() == []


def test_enabled_and_disabled_components() -> None:
    doc = _doc(
        componentRefs=[
            {"name": "a"},
            {"name": "b", "overrides": {"enabled": False}},
            {"name": "c", "overrides": {"enabled": True}},
            {"name": "d", "overrides": None},
        ]
    )
    r = parse(doc)
    assert [c.name for c in r.enabled_components()] == ["a", "c", "d"]
    assert r.enabled_component("b") is None
    assert r.component("b") is not None


def test_non_bool_enabled_warns_and_counts_as_enabled() -> None:
    doc = _doc(componentRefs=[{"name": "a", "overrides": {"enabled": "false"}}])
    r, warnings = parse_recipe(doc, "r.yaml")
    assert r.enabled_component("a") is not None
    assert warnings == [
        "recipe r.yaml: component \"a\" overrides.enabled is 'false', not a boolean; "
        "treating the component as enabled"
    ]


def test_yaml12_on_yes_stay_strings() -> None:
    text = """
kind: RecipeResult
apiVersion: aicr.run/v1alpha2
criteria: {service: on, intent: yes}
constraints:
  - {name: Some.flag.x, value: off}
componentRefs:
  - name: a
    overrides: {enabled: no}
"""
    r, warnings = parse_recipe(yamlio.load(text), "r.yaml")
    assert r.criteria.service == "on"
    assert r.criteria.intent == "yes"
    assert r.constraints[0].value == "off"
    # "no" is a string in YAML 1.2, so the component stays enabled (with a warning).
    assert r.enabled_component("a") is not None
    assert len(warnings) == 1


def test_phase_helpers() -> None:
    doc = _doc(
        validation={
            "performance": {
                "checks": ["nccl-all-reduce-bw", "nccl-all-reduce-bw"],
                "constraints": [{"name": "nccl-all-reduce-bw", "value": ">= 300"}],
            },
            "deployment": {"checks": []},
            "readiness": {"whatever": True},
        }
    )
    r = parse(doc)
    assert r.phase_checks("performance") == ["nccl-all-reduce-bw"]
    assert r.phase_checks("conformance") == []
    assert r.phase_checks("deployment") == []
    assert r.declared_phases() == ["performance"]
    c = r.phase_constraint("performance", "nccl-all-reduce-bw")
    assert c is not None and c.value == ">= 300"
    assert r.phase_constraint("performance", "other") is None
    assert r.phase_constraints("deployment") == []
    with pytest.raises(UsageError) as exc:
        r.phase_checks("readiness")
    assert str(exc.value) == (
        'invalid phase "readiness": must be one of: deployment, performance, conformance, all'
    )


def test_legacy_excluded_overlays_strings() -> None:
    r = parse(_doc(metadata={"version": "v0.11.1", "excludedOverlays": ["a", {"name": "b", "reason": "x"}]}))
    assert [e.name for e in r.metadata.excluded_overlays] == ["a", "b"]


def test_display_helpers() -> None:
    r = parse(_doc())
    assert r.display_name == "h100-eks-ubuntu-training"
    assert r.criteria.summary() == "service=eks accelerator=h100 intent=training os=ubuntu"
    assert r.header_line() == (
        "recipe h100-eks-ubuntu-training (service=eks accelerator=h100 intent=training os=ubuntu; "
        "1 enabled components) from r.yaml"
    )
    assert parse(_doc(criteria=None)).display_name == "recipe"


def test_embedded_example_recipe() -> None:
    data = yamlio.load((EXAMPLES / "h100-eks-training.yaml").read_bytes())
    r = parse(data, "h100-eks-training.yaml")
    assert r.display_name == "h100-eks-ubuntu-training-kubeflow"
    assert len(r.component_refs) == 12
    assert sorted(r.deployment_order) == sorted(c.name for c in r.enabled_components())
    assert r.declared_phases() == list(PHASES)
    assert r.phase_checks("deployment") == [
        "operator-health",
        "expected-resources",
        "gpu-operator-version",
        "check-nvidia-smi",
    ]
    dc = r.phase_constraint("deployment", "Deployment.gpu-operator.version")
    assert dc is not None and dc.value == ">= v24.6.0"
    pc = r.phase_constraint("performance", "nccl-all-reduce-bw")
    assert pc is not None and pc.value == ">= 300"
    # deploymentOrder respects every dependency edge.
    pos = {name: i for i, name in enumerate(r.deployment_order)}
    for ref in r.component_refs:
        for dep in ref.dependency_refs:
            assert pos[dep] < pos[ref.name]


def _version(text: str) -> tuple[int, ...]:
    core = text.lstrip("v").split("-")[0].split("+")[0]
    return tuple(int(p) for p in core.split("."))


def test_embedded_example_snapshot_satisfies_readiness() -> None:
    """Independent of constraints.py: exact and >= checks of the four readiness constraints."""
    recipe = parse(yamlio.load((EXAMPLES / "h100-eks-training.yaml").read_bytes()))
    snap = yamlio.load((EXAMPLES / "h100-eks-training-snapshot.yaml").read_bytes())
    assert snap["kind"] == "Snapshot" and snap["apiVersion"] == "aicr.run/v1alpha2"

    def value(path: str) -> str:
        mtype, rest = path.split(".", 1)
        subtype, key = rest.split(".", 1)
        m = next(m for m in snap["measurements"] if m["type"] == mtype)
        s = next(s for s in m["subtypes"] if s["subtype"] == subtype)
        return str(s["data"][key])

    for c in recipe.constraints:
        actual = value(c.name)
        if c.value.startswith(">="):
            want = _version(c.value[2:].strip())
            have = _version(actual)[: len(want)]
            assert have >= want, (c.name, actual)
        else:
            assert actual == c.value, (c.name, actual)
    gpu = next(m for m in snap["measurements"] if m["type"] == "GPU")["subtypes"][0]["data"]
    assert gpu["gpu-count"] == 8 and gpu["model"] == "h100"
