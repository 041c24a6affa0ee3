"""A ``RecipeMetadata`` overlay given as ``--recipe`` is built into a recipe from its criteria, as
AICR's recipe loader does; without criteria it is refused naming ``aicr-pytest recipe``."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest.core.datatree import DataTree, embedded_data_root
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.recipe import is_overlay, parse_recipe
from aicr_pytest.recipegen import criteria as crit
from aicr_pytest.recipegen.build import generate
from aicr_pytest.recipegen.hydrate import hydrate_overlay
from aicr_pytest.recipegen.store import load_store


@pytest.fixture(scope="module")
def data() -> DataTree:
    return DataTree(embedded_data_root(), None)


def test_an_overlay_is_the_recipe_its_criteria_generate(data: DataTree) -> None:
    overlay = {
        "kind": "RecipeMetadata",
        "metadata": {"name": "mine"},
        "spec": {"criteria": {"service": "eks", "accelerator": "h100", "intent": "training"}},
    }
    assert is_overlay(overlay)
    doc, line = hydrate_overlay(overlay, "mine.yaml", data)
    store = load_store(data)
    want = generate(
        store, data, crit.build(store.registry, service="eks", accelerator="h100", intent="training")
    )
    assert doc == want.document
    assert line == (
        "recipe mine.yaml is a RecipeMetadata overlay; hydrated through the recipe builder for its criteria "
        "(service=eks, accelerator=h100, intent=training): overlays " + ", ".join(want.applied)
    )
    recipe, _ = parse_recipe(doc, "mine.yaml")
    assert recipe.phase_checks("deployment")


def test_nodes_and_typed_scalars_are_read_as_written(data: DataTree) -> None:
    overlay = {"kind": "RecipeMetadata", "spec": {"criteria": {"service": "eks", "nodes": 4}}}
    doc, _ = hydrate_overlay(overlay, "o.yaml", data)
    assert doc["criteria"]["nodes"] == 4


@pytest.mark.parametrize("spec", [{}, {"criteria": {}}, {"criteria": None}, None])
def test_an_overlay_without_criteria_names_aicr_pytest_recipe(data: DataTree, spec: object) -> None:
    with pytest.raises(UsageError) as err:
        hydrate_overlay({"kind": "RecipeMetadata", "spec": spec}, "base.yaml", data)
    assert str(err.value) == (
        "overlay base.yaml has no criteria; only leaf overlays (with spec.criteria) can be used directly — "
        'run "aicr-pytest recipe" with explicit criteria instead'
    )


def test_bad_criteria_are_one_line(data: DataTree) -> None:
    with pytest.raises(UsageError) as err:
        hydrate_overlay(
            {"kind": "RecipeMetadata", "spec": {"criteria": {"service": "bogus"}}}, "o.yaml", data
        )
    assert str(err.value) == (
        "overlay o.yaml: spec.criteria: invalid service type: bogus "
        "(valid: any, aks, bcm, eks, generic, gke, k0s, kind, lke, metal3, ocp, oke, rke2)"
    )


def test_without_a_hydrator_the_refusal_names_aicr_pytest_recipe(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        parse_recipe({"kind": "RecipeMetadata"}, "o.yaml")
    assert str(err.value) == (
        'recipe o.yaml: kind "RecipeMetadata" is an overlay, not a recipe; run "aicr-pytest recipe" to '
        "produce a hydrated RecipeResult first"
    )
