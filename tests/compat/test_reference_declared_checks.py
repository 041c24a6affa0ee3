"""Our embedded data against AICR's recipes over the reference criteria: the criteria of every
AICR leaf overlay (../shared/reference/aicr/recipes, read in place).

For each one, ``aicr-pytest recipe`` is generated twice — from AICR's recipes
(``--no-embedded-data --data``) and from our embedded data alone — and the declared validation
(per phase: checks in order, constraints) and top-level constraints are compared.  Every values file
a recipe generated from our embedded data names must exist in it.  Beyond the leaves, a sample of
every combination of the criteria values AICR's overlays declare must give the same declared
validation, or the same refusal (the module run compares them all).  Run as a module to print the
figures: ``python -m tests.compat.test_reference_declared_checks``.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core.datatree import DataTree, embedded_data_root
from aicr_pytest.core.errors import UsageError
from aicr_pytest.recipegen import criteria as crit
from aicr_pytest.recipegen.build import generate
from aicr_pytest.recipegen.cli import data_tree
from aicr_pytest.recipegen.store import OverlayStore, load_store

pytestmark = pytest.mark.compat

Declared = tuple[dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]], tuple[tuple[str, str], ...]]


def declared(doc: dict[str, Any]) -> Declared:
    """Per phase (checks in order, constraints by name), and the top-level constraints."""

    def constraints(items: Any) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((str(c["name"]), str(c["value"])) for c in items or []))

    phases = {
        phase: (tuple(body.get("checks") or []), constraints(body.get("constraints")))
        for phase, body in (doc.get("validation") or {}).items()
    }
    return phases, constraints(doc.get("constraints"))


@dataclass
class Comparison:
    criteria: list[str]
    differ: list[str]
    refused: list[str]  # our data refuses the criteria (an OS guard, an unknown value)
    missing_values: dict[str, list[str]]  # criteria -> values files our recipe names and lacks


def _generate(store: OverlayStore, data: DataTree, values: dict[str, Any], nodes: int) -> dict[str, Any]:
    query = crit.build(store.registry, **values, nodes=nodes)
    with contextlib.redirect_stderr(io.StringIO()):
        doc: dict[str, Any] = generate(store, data, query).document
    return doc


def compare(reference_recipes: Path, our_root: Path | None = None) -> Comparison:
    """``our_root``: the data tree standing for our embedded data (default: the embedded one)."""
    theirs = data_tree(str(reference_recipes), True)
    ours = DataTree(our_root or embedded_data_root(), None)
    their_store, our_store = load_store(theirs), load_store(ours)
    result = Comparison([], [], [], {})
    for overlay in sorted(their_store.overlays.values(), key=lambda o: o.name):
        c = overlay.spec.criteria
        if c is None or crit.specificity(c) == 0:
            continue
        values = {f: getattr(c, f) for f in crit.FIELDS}
        result.criteria.append(overlay.name)
        expected = declared(_generate(their_store, theirs, values, c.nodes))
        try:
            doc = _generate(our_store, ours, values, c.nodes)
        except UsageError:
            result.refused.append(overlay.name)
            continue
        if declared(doc) != expected:
            result.differ.append(overlay.name)
        lacking = [
            str(r["valuesFile"])
            for r in doc["componentRefs"]
            if r.get("valuesFile") and ours.find(r["valuesFile"]) is None
        ]
        if lacking:
            result.missing_values[overlay.name] = lacking
    return result


def _outcome(store: OverlayStore, data: DataTree, values: dict[str, str]) -> Declared | str:
    try:
        return declared(_generate(store, data, values, 0))
    except UsageError as exc:
        return f"refused: {exc}"


def grid(reference_recipes: Path, step: int = 1, our_root: Path | None = None) -> tuple[int, list[str]]:
    """Beyond the leaves: every ``step``-th combination of the criteria values AICR's overlays
    declare (plus ``any`` and one value none declares), generated both ways; a refusal must be the
    same refusal.  Returns the number compared and the differing combinations."""
    theirs = data_tree(str(reference_recipes), True)
    ours = DataTree(our_root or embedded_data_root(), None)
    their_store, our_store = load_store(theirs), load_store(ours)
    unused = {"service": "rke2", "accelerator": "gb300", "os": "talos", "platform": "runai"}
    axes = [
        [ANY_VALUE, *([unused[f]] if f in unused else []), *sorted(their_store.registry.registered(f))]
        for f in crit.FIELDS
    ]
    combos = [dict(zip(crit.FIELDS, combo, strict=True)) for combo in itertools.product(*axes)]
    combos = [c for c in combos if any(v != ANY_VALUE for v in c.values())][::step]
    differ = [
        ",".join(f"{k}={v}" for k, v in c.items() if v != ANY_VALUE)
        for c in combos
        if _outcome(their_store, theirs, c) != _outcome(our_store, ours, c)
    ]
    return len(combos), differ


ANY_VALUE = ""


@pytest.fixture(scope="module")
def comparison(reference_dir: Path) -> Comparison:
    return compare(reference_dir / "aicr" / "recipes")


def test_the_reference_criteria_are_every_aicr_leaf_overlay(comparison: Comparison) -> None:
    assert len(comparison.criteria) >= 90


def test_every_values_file_our_recipes_name_exists(comparison: Comparison) -> None:
    assert comparison.missing_values == {}


def test_declared_checks_and_constraints_equal_aicrs(comparison: Comparison) -> None:
    assert comparison.differ == [], f"declared checks/constraints differ from AICR's for: {comparison.differ}"
    assert comparison.refused == [], f"our embedded data refuses: {comparison.refused}"


def test_a_sample_of_every_criteria_combination_declares_the_same(reference_dir: Path) -> None:
    compared, differ = grid(reference_dir / "aicr" / "recipes", step=13)
    assert compared > 300
    assert differ == [], f"declared checks/constraints or refusals differ for: {differ}"


def test_the_comparison_names_the_criteria_our_data_gets_wrong(reference_dir: Path, tmp_path: Path) -> None:
    """A check dropped from one overlay, and an overlay removed, show up by criteria name."""
    ours = tmp_path / "recipes"
    shutil.copytree(embedded_data_root(), ours)
    overlay = ours / "overlays" / "h200-any.yaml"
    text = overlay.read_text()
    assert "check-nvidia-smi" in text
    overlay.write_text(text.replace(", check-nvidia-smi]", "]"))
    (ours / "overlays" / "a100-eks-training.yaml").unlink()
    found = compare(reference_dir / "aicr" / "recipes", ours)
    assert found.differ == ["h200-any", "h200-eks-inference"]
    compared, differ = grid(reference_dir / "aicr" / "recipes", step=13, our_root=ours)
    assert compared > 300 and "accelerator=h200,intent=training,os=cos" in differ
    assert all("accelerator=h200" in d or "accelerator=a100" in d for d in differ)
    # the OS guard refuses the criteria; its two descendants lose their chain's parent
    assert found.refused == [
        "a100-eks-training",
        "a100-eks-ubuntu-training",
        "a100-eks-ubuntu-training-kubeflow",
    ]


def test_the_comparison_tells_a_difference_apart(reference_dir: Path) -> None:
    recipe = {
        "validation": {"deployment": {"checks": ["a", "b"]}},
        "constraints": [{"name": "x", "value": "1"}],
    }
    reordered = {
        "validation": {"deployment": {"checks": ["b", "a"]}},
        "constraints": [{"name": "x", "value": "1"}],
    }
    assert declared(recipe) != declared(reordered)
    assert declared(recipe) == declared({**recipe, "componentRefs": []})


if __name__ == "__main__":  # pragma: no cover - a report, not a test
    found = compare(Path(__file__).resolve().parents[3] / "shared" / "reference" / "aicr" / "recipes")
    print(f"reference criteria: {len(found.criteria)}")
    print(f"declared checks/constraints differ: {len(found.differ)}: {', '.join(found.differ)}")
    print(f"refused by our data: {len(found.refused)}: {', '.join(found.refused)}")
    print(f"runs naming a missing values file: {len(found.missing_values)}")
    compared, differ = grid(Path(__file__).resolve().parents[3] / "shared" / "reference" / "aicr" / "recipes")
    print(f"criteria combinations compared: {compared}, differ: {len(differ)}: {', '.join(differ[:20])}")
