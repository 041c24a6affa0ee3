"""`aicr-pytest recipe --no-embedded-data --data <AICR recipes>` reproduces AICR's generations.

Reads ../shared/reference in place: the golden `golden/cuj1-training-recipe.yaml` (a Chainsaw
assertion: only the fields it asserts are compared, lists element by element) and the two
verified generations.  Output is compared as parsed YAML; formatting and the order of keys in a
mapping are not compared (AICR's YAML writer differs in both, see docs).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.cli import main
from aicr_pytest.core import yamlio
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.policy import DEVICE_PLUGIN, resolve_allocation_policy
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.recipegen import criteria as crit
from aicr_pytest.recipegen.build import generate
from aicr_pytest.recipegen.store import load_store

pytestmark = pytest.mark.compat

CUJ1 = [
    "--service",
    "eks",
    "--accelerator",
    "h100",
    "--intent",
    "training",
    "--os",
    "ubuntu",
    "--platform",
    "kubeflow",
]
CUJ2 = [
    "--service",
    "eks",
    "--accelerator",
    "h100",
    "--intent",
    "inference",
    "--os",
    "ubuntu",
    "--platform",
    "dynamo",
]


@pytest.fixture(scope="module")
def aicr_recipes(reference_dir: Path) -> Path:
    return reference_dir / "aicr" / "recipes"


def recipe_cli(data: Path, args: list[str], tmp_path: Path, fmt: str = "yaml") -> dict[str, Any]:
    out = tmp_path / f"recipe.{fmt}"
    code = main(["recipe", "--no-embedded-data", "--data", str(data), *args, "--format", fmt, "-o", str(out)])
    assert code == 0
    text = out.read_text()
    doc: dict[str, Any] = json.loads(text) if fmt == "json" else yamlio.load(text)
    return doc


def chainsaw_subset(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Differences under Chainsaw's assertion rules: mappings assert only their keys, lists must have
    the same length and match element by element, scalars must be equal."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected a mapping, got {actual!r}"]
        problems = []
        for key, value in expected.items():
            if key not in actual:
                problems.append(f"{where}.{key}: missing")
            else:
                problems.extend(chainsaw_subset(value, actual[key], f"{where}.{key}"))
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {len(expected)} items, got {actual!r}"]
        return [
            p
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for p in chainsaw_subset(e, a, f"{where}[{i}]")
        ]
    return [] if expected == actual else [f"{where}: expected {expected!r}, got {actual!r}"]


def test_chainsaw_subset_catches_differences() -> None:
    assert chainsaw_subset({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2, "c": 3}], "d": 4}) == []
    assert chainsaw_subset({"a": [1, 2]}, {"a": [1]}) == [".a: expected 2 items, got [1]"]
    assert chainsaw_subset({"a": {"b": 1}}, {"a": {"b": 2}}) == [".a.b: expected 1, got 2"]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_cuj1_golden(aicr_recipes: Path, reference_dir: Path, tmp_path: Path, fmt: str) -> None:
    golden = yamlio.load((reference_dir / "aicr" / "golden" / "cuj1-training-recipe.yaml").read_bytes())
    assert set(golden) >= {
        "criteria",
        "constraints",
        "componentRefs",
        "deploymentOrder",
    }  # the file asserts these
    assert chainsaw_subset(golden, recipe_cli(aicr_recipes, CUJ1, tmp_path, fmt)) == []


def test_verified_generation_cuj1(aicr_recipes: Path, tmp_path: Path) -> None:
    """The first verified generation."""
    doc = recipe_cli(aicr_recipes, CUJ1, tmp_path)
    assert doc["metadata"]["appliedOverlays"] == [
        "base",
        "monitoring-hpa",
        "h100-any",
        "eks",
        "eks-training",
        "h100-eks-training",
        "h100-eks-ubuntu-training",
        "h100-eks-ubuntu-training-kubeflow",
    ]
    assert [(c["name"], c["value"]) for c in doc["constraints"]] == [
        ("K8s.server.version", ">= 1.32.4"),
        ("OS.release.ID", "ubuntu"),
        ("OS.release.VERSION_ID", "24.04"),
        ("OS.sysctl./proc/sys/kernel/osrelease", ">= 6.8"),
    ]
    validation = doc["validation"]
    assert validation["performance"] == {
        "checks": ["nccl-all-reduce-bw"],
        "constraints": [{"name": "nccl-all-reduce-bw", "value": ">= 300"}],
    }
    assert len(validation["deployment"]["checks"]) == 4
    assert validation["deployment"]["constraints"] == [
        {"name": "Deployment.gpu-operator.version", "value": ">= v24.6.0"}
    ]
    assert len(validation["conformance"]["checks"]) == 10


def test_verified_generation_cuj2(aicr_recipes: Path, tmp_path: Path) -> None:
    """The second verified generation: the guide's readiness failure example needs >= 1.34."""
    doc = recipe_cli(aicr_recipes, CUJ2, tmp_path)
    constraints = {c["name"]: c["value"] for c in doc["constraints"]}
    assert constraints["K8s.server.version"] == ">= 1.34"
    performance = doc["validation"]["performance"]
    assert performance["checks"] == ["inference-perf"]
    assert {c["name"]: c["value"] for c in performance["constraints"]} == {
        "inference-throughput": ">= 50000",
        "inference-ttft-p99": "<= 2000",
        "inference-model": "Qwen/Qwen3-8B",
        "inference-concurrency-per-gpu": "256",
        "inference-routing-mode": "dynamo-router",
    }
    assert "dynamo-platform" in [r["name"] for r in doc["componentRefs"]]
    pos = {n: i for i, n in enumerate(doc["deploymentOrder"])}
    for ref in doc["componentRefs"]:
        assert all(pos[d] < pos[ref["name"]] for d in ref.get("dependencyRefs", [])), ref["name"]


def test_health_check_asserts_hydrated_from_the_registry(aicr_recipes: Path, tmp_path: Path) -> None:
    doc = recipe_cli(aicr_recipes, CUJ1, tmp_path)
    gpu = next(r for r in doc["componentRefs"] if r["name"] == "gpu-operator")
    registry = yamlio.load((aicr_recipes / "registry.yaml").read_bytes())
    entry = next(c for c in registry["components"] if c["name"] == "gpu-operator")
    assert gpu["healthCheckAsserts"] == (aicr_recipes / entry["healthCheck"]["assertFile"]).read_text()


def test_os_guard_on_aicr_data(aicr_recipes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "recipe",
            "--no-embedded-data",
            "--data",
            str(aicr_recipes),
            "--service",
            "gke",
            "--accelerator",
            "h100",
        ]
    )
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "aicr-pytest: error: service 'gke' has no OS-agnostic recipe for accelerator 'h100'; "
        "specify an OS (valid: cos)"
    )


def test_every_aicr_overlay_resolves_to_the_device_plugin(aicr_recipes: Path) -> None:
    """Every criteria-bearing stock overlay generates a recipe whose GPU allocation policy is
    device-plugin-extended-resource (hydrated from the same data tree)."""
    tree = DataTree(aicr_recipes)
    store = load_store(tree)
    modes: Counter[str] = Counter()
    for overlay in store.overlays.values():
        c = overlay.spec.criteria
        if c is None:
            continue
        query = crit.build(store.registry, None, **{f: getattr(c, f) for f in crit.FIELDS}, nodes=c.nodes)
        recipe, _ = parse_recipe(generate(store, tree, query).document, overlay.name)
        modes[resolve_allocation_policy(recipe, tree).mode] += 1
    assert len(modes) == 1 and DEVICE_PLUGIN in modes and modes[DEVICE_PLUGIN] >= 90


def test_snapshot_aware_generation_on_aicr_data(
    aicr_recipes: Path, reference_dir: Path, tmp_path: Path
) -> None:
    """The chainsaw mock snapshot (K8s v1.33.0) detects no service, so flags give the criteria; every
    CUJ1 overlay constraint passes on it, so nothing is excluded."""
    snapshot = reference_dir / "aicr" / "snapshots" / "mock-snapshot.yaml"
    doc = recipe_cli(aicr_recipes, [*CUJ1, "--snapshot", str(snapshot)], tmp_path)
    assert "excludedOverlays" not in doc["metadata"]
    assert doc["metadata"]["appliedOverlays"][-1] == "h100-eks-ubuntu-training-kubeflow"
    # the inference generation needs 1.34: its leaf is excluded on the same snapshot
    doc = recipe_cli(aicr_recipes, [*CUJ2, "--snapshot", str(snapshot)], tmp_path)
    assert {"name": "h100-eks-ubuntu-inference-dynamo", "reason": "constraint-failed"} in doc["metadata"][
        "excludedOverlays"
    ]
    warning = next(
        w for w in doc["metadata"]["constraintWarnings"] if w["overlay"] == "h100-eks-ubuntu-inference-dynamo"
    )
    assert warning == {
        "overlay": "h100-eks-ubuntu-inference-dynamo",
        "constraint": "K8s.server.version",
        "expected": ">= 1.34",
        "actual": "v1.33.0",
        "reason": "expected >= 1.34, got v1.33.0",
    }


def test_yaml_and_json_outputs_are_the_same_document(aicr_recipes: Path, tmp_path: Path) -> None:
    assert recipe_cli(aicr_recipes, CUJ2, tmp_path, "yaml") == recipe_cli(
        aicr_recipes, CUJ2, tmp_path, "json"
    )


def test_stdout_output(aicr_recipes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recipe", "--no-embedded-data", "--data", str(aicr_recipes), *CUJ1]) == 0
    captured = capsys.readouterr()
    doc = yamlio.load(io.StringIO(captured.out).read())
    assert doc["kind"] == "RecipeResult" and doc["criteria"]["platform"] == "kubeflow"
    assert captured.err.startswith("aicr-pytest recipe: recipe for service=eks")
