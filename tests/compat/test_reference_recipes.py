"""Real AICR recipes and component values (read in place from ../shared/reference) load unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.policy import E4_NO_ADVERTISER, INVALID_REQUEST_PREFIX, resolve_allocation_policy
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.core.sources import load_yaml_document

pytestmark = pytest.mark.compat

_RECIPE_KIND = re.compile(r"^kind:\s*RecipeResult\s*$", re.MULTILINE)


def _recipe_files(aicr: Path) -> list[Path]:
    return sorted(
        p
        for p in aicr.rglob("*.y*ml")
        if p.suffix in (".yaml", ".yml") and _RECIPE_KIND.search(p.read_text())
    )


def test_every_reference_recipe_result_parses(reference_dir: Path) -> None:
    aicr = reference_dir / "aicr"
    files = _recipe_files(aicr)
    # examples/recipes (4) + golden/cuj1-training-recipe.yaml at least.
    assert len(files) >= 5
    parsed = 0
    for path in files:
        for doc in yamlio.load_all(path.read_bytes()):
            if not isinstance(doc, dict) or doc.get("kind") != "RecipeResult":
                continue
            recipe, warnings = parse_recipe(doc, str(path.relative_to(aicr)))
            assert warnings == [], path
            assert recipe.component_refs, path
            parsed += 1
    assert parsed == len(files)


def test_reference_recipes_through_the_file_source(reference_dir: Path) -> None:
    for path in _recipe_files(reference_dir / "aicr"):
        doc = load_yaml_document(str(path), "recipe", None)
        recipe, _ = parse_recipe(doc, str(path))
        assert recipe.criteria.summary(), path


def test_every_reference_component_values_file_is_a_mapping(reference_dir: Path) -> None:
    components = reference_dir / "aicr" / "recipes" / "components"
    files = sorted(components.glob("*/values*.yaml"))
    assert len(files) >= 30
    tree = DataTree.default(reference_dir / "aicr" / "recipes")
    for path in files:
        rel = path.relative_to(reference_dir / "aicr" / "recipes").as_posix()
        doc = tree.load_yaml(rel)
        # A comment-only file (components/grove/values.yaml) is an empty document: no values.
        assert isinstance(doc, dict) or doc is None, rel
        assert tree.resolve(rel) == path.resolve()


def test_reference_registry_merges_over_ours(reference_dir: Path) -> None:
    tree = DataTree.default(reference_dir / "aicr" / "recipes")
    names = [c["name"] for c in tree.registry()]
    assert len(names) == len(set(names))
    ours = [c["name"] for c in DataTree.default().registry()]
    assert names[: len(ours)] == ours  # embedded order kept, external entries replace in place
    entry = tree.registry_entry("gpu-operator")
    assert entry is not None and entry.get("healthCheck", {}).get("assertFile")


@pytest.mark.parametrize(
    "name",
    ["eks-training.yaml", "aks-training.yaml", "eks-gb200-ubuntu-training-with-validation.yaml"],
)
def test_reference_examples_resolve_device_plugin(reference_dir: Path, name: str) -> None:
    """These examples resolve to device-plugin-extended-resource."""
    path = reference_dir / "aicr" / "examples" / "recipes" / name
    recipe, _ = parse_recipe(yamlio.load(path.read_bytes()), name)
    tree = DataTree.default(reference_dir / "aicr" / "recipes")
    policy = resolve_allocation_policy(recipe, tree)
    assert policy.mode == "device-plugin-extended-resource"
    assert policy.warnings == []
    # Our embedded data alone gives the same answer (values variants fall back to the base files).
    assert resolve_allocation_policy(recipe, DataTree.default()).mode == policy.mode


def test_reference_kind_example_has_no_advertiser(reference_dir: Path) -> None:
    """examples/recipes/kind.yaml is rejected with E4."""
    path = reference_dir / "aicr" / "examples" / "recipes" / "kind.yaml"
    recipe, _ = parse_recipe(yamlio.load(path.read_bytes()), "kind.yaml")
    with pytest.raises(UsageError) as exc:
        resolve_allocation_policy(recipe, DataTree.default(reference_dir / "aicr" / "recipes"))
    assert str(exc.value) == INVALID_REQUEST_PREFIX + E4_NO_ADVERTISER


def test_our_example_with_reference_data(reference_dir: Path) -> None:
    """Our embedded example resolves the same with AICR's own data tree layered on top."""
    path = Path(__file__).resolve().parents[2] / "recipes" / "examples" / "h100-eks-training.yaml"
    recipe, _ = parse_recipe(yamlio.load(path.read_bytes()), path.name)
    policy = resolve_allocation_policy(recipe, DataTree.default(reference_dir / "aicr" / "recipes"))
    assert policy.mode == "device-plugin-extended-resource"


def test_reference_mock_snapshot_satisfies_our_example_exact_constraints(reference_dir: Path) -> None:
    """The four readiness constraint names of our example exist in AICR's mock snapshot."""
    snap = yamlio.load((reference_dir / "aicr" / "snapshots" / "mock-snapshot.yaml").read_bytes())
    path = Path(__file__).resolve().parents[2] / "recipes" / "examples" / "h100-eks-training.yaml"
    recipe, _ = parse_recipe(yamlio.load(path.read_bytes()), path.name)
    present = {
        f"{m['type']}.{s['subtype']}.{k}"
        for m in snap["measurements"]
        for s in m["subtypes"]
        for k in s.get("data", {})
    }
    assert {c.name for c in recipe.constraints} <= present
