"""Real AICR snapshot and recipe files (read in place from ../shared/reference) through our parser."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest.core import blockyaml, yamlio
from aicr_pytest.core.constraints import evaluate_constraint, is_snapshot_path
from aicr_pytest.core.snapshot import Snapshot, ValueNotFound, load_snapshot_text

pytestmark = pytest.mark.compat


def _yaml_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _snapshot_files(aicr: Path) -> list[Path]:
    """Every file under reference/aicr that is a snapshot: kind Snapshot, or a header-less
    document whose top level has ``measurements`` (like AICR's mock snapshots)."""
    found = set((aicr / "snapshots").glob("*.yaml"))
    for path in _yaml_files(aicr):
        try:
            doc = yamlio.load(path.read_text())
        except yaml.YAMLError:
            continue  # multi-document files, templates: not snapshots
        if isinstance(doc, dict) and (doc.get("kind") == "Snapshot" or "measurements" in doc):
            found.add(path)
    return sorted(found)


@pytest.fixture(scope="module")
def aicr_dir(reference_dir: Path) -> Path:
    return reference_dir / "aicr"


@pytest.fixture(scope="module")
def snapshots(aicr_dir: Path) -> dict[str, Snapshot]:
    files = _snapshot_files(aicr_dir)
    assert files, f"no snapshot files under {aicr_dir}"
    return {p.name: load_snapshot_text(p.read_bytes(), str(p)) for p in files}


def test_every_reference_snapshot_parses(aicr_dir: Path, snapshots: dict[str, Snapshot]) -> None:
    assert {"mock-snapshot.yaml", "mock-snapshot-v0.11.1.yaml"} <= set(snapshots)
    for name, snap in snapshots.items():
        assert snap.types(), name
        assert snap.lookup("K8s.server.version").startswith("v"), name


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ("K8s.server.version", "v1.33.0"),
        ("OS.release.ID", "ubuntu"),
        ("OS.release.VERSION_ID", "24.04"),
        ("OS.sysctl./proc/sys/kernel/osrelease", "6.8.0-1015-aws"),
        ("K8s.helm.gpu-operator.version", "v25.10.1"),
        ("K8s.helm.aws-ebs-csi-driver.version", "2.55.0"),
        ("K8s.helm.nodewright-operator.chart", "skyhook-operator"),
        ("K8s.helm.kube-prometheus-stack.version", "82.8.0"),
    ],
)
def test_mock_snapshot_addresses(snapshots: dict[str, Snapshot], path: str, want: str) -> None:
    assert snapshots["mock-snapshot.yaml"].lookup(path) == want


def test_old_mock_snapshot(snapshots: dict[str, Snapshot]) -> None:
    old = snapshots["mock-snapshot-v0.11.1.yaml"]
    assert old.lookup("K8s.helm.aws-efa.version") == "v0.5.3"
    assert old.lookup("K8s.helm.skyhook-operator.version") == "v0.14.0"
    with pytest.raises(ValueNotFound, match="subtype not found in measurement"):
        old.lookup("OS.sysctl./proc/sys/kernel/osrelease")


def _top_level_constraints(recipe: Path) -> list[dict[str, Any]]:
    doc = yamlio.load(recipe.read_text())
    constraints = doc.get("constraints") or []
    assert isinstance(constraints, list)
    return constraints


def test_mock_snapshot_satisfies_the_cuj1_recipe(aicr_dir: Path, snapshots: dict[str, Snapshot]) -> None:
    """The mock snapshot passes all four readiness constraints of the EKS/H100 recipe."""
    constraints = _top_level_constraints(aicr_dir / "golden" / "cuj1-training-recipe.yaml")
    assert len(constraints) == 4
    for c in constraints:
        assert is_snapshot_path(c["name"])
        result = evaluate_constraint(
            c["name"], c["value"], snapshots["mock-snapshot.yaml"], c.get("severity")
        )
        assert result.passed, result
    # the v0.11.1 mock has no OS.sysctl: that constraint fails closed
    old = snapshots["mock-snapshot-v0.11.1.yaml"]
    results = {c["name"]: evaluate_constraint(c["name"], c["value"], old) for c in constraints}
    sysctl = results.pop("OS.sysctl./proc/sys/kernel/osrelease")
    assert not sysctl.passed and sysctl.error_kind == "not_found"
    assert all(r.passed for r in results.values())


def test_recipe_constraint_names_classify(aicr_dir: Path) -> None:
    """Top-level constraint names address the snapshot; phase constraint names never do."""
    recipes = [
        *sorted((aicr_dir / "examples" / "recipes").glob("*.yaml")),
        aicr_dir / "golden" / "cuj1-training-recipe.yaml",
    ]
    seen_top = seen_phase = 0
    for recipe in recipes:
        doc = yamlio.load(recipe.read_text())
        for c in doc.get("constraints") or []:
            assert is_snapshot_path(c["name"]), (recipe.name, c["name"])
            seen_top += 1
        for phase in (doc.get("validation") or {}).values():
            for c in (phase or {}).get("constraints") or []:
                assert not is_snapshot_path(c["name"]), (recipe.name, c["name"])
                seen_phase += 1
    assert seen_top >= 4 and seen_phase >= 1


def test_blockyaml_agrees_with_yamlio_on_every_reference_file(reference_dir: Path) -> None:
    """The fast loader must return exactly what the full loader returns, or decline."""

    def same(a: object, b: object) -> bool:
        if type(a) is not type(b):
            return False
        if isinstance(a, dict) and isinstance(b, dict):
            return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
        return a == b

    fast = 0
    for path in _yaml_files(reference_dir):
        text = path.read_text()
        ok, data = blockyaml.try_load(text)
        try:
            want = yamlio.load(text)
        except yaml.YAMLError:
            assert not ok, f"fast path accepted {path} which yamlio rejects"
            continue
        if ok:
            fast += 1
            assert same(data, want), path
    assert fast > 50  # most machine-written files take the fast path
