"""`aicr-pytest recipe` end to end: flags, criteria files, snapshots, outputs, and the round trip
recipe → `validate --no-cluster`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.cli import main
from aicr_pytest.core import yamlio

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "recipes" / "examples"
TRAINING = [
    "--service",
    "eks",
    "--accelerator",
    "h100",
    "--os",
    "ubuntu",
    "--intent",
    "training",
    "--platform",
    "kubeflow",
]
INFERENCE = [
    "--service",
    "eks",
    "--gpu",
    "h100",
    "--os",
    "ubuntu",
    "--intent",
    "inference",
    "--platform",
    "dynamo",
]


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ),
        timeout=180,
        check=False,
    )


def generate_to(tmp_path: Path, *args: str, name: str = "recipe.yaml") -> dict[str, Any]:
    out = tmp_path / name
    assert main(["recipe", *args, "-o", str(out)]) == 0
    doc: dict[str, Any] = yamlio.load(out.read_bytes())
    return doc


def _strip_version(doc: dict[str, Any]) -> dict[str, Any]:
    doc["metadata"].pop("version", None)
    return doc


def _ctrf(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_round_trip_generate_then_validate_no_cluster(tmp_path: Path) -> None:
    """generate → validate --no-cluster: exit 0, readiness passes on the matching snapshot, every
    declared check is reported (skipped - no-cluster mode)."""
    recipe, ctrf = tmp_path / "recipe.yaml", tmp_path / "ctrf.json"
    gen = cli("recipe", *TRAINING, "--output", str(recipe))
    assert gen.returncode == 0, gen.stderr
    assert gen.stdout == ""
    assert gen.stderr.strip().splitlines()[-1].endswith(f"written to {recipe}")
    snapshot = EXAMPLES / "h100-eks-training-snapshot.yaml"
    val = cli("validate", "-r", str(recipe), "-s", str(snapshot), "--no-cluster", "-o", str(ctrf))
    assert val.returncode == 0, val.stderr
    log = val.stdout + val.stderr
    assert "readiness constraint failed" not in log and "pre-flight failed" not in log
    tests = _ctrf(ctrf)["results"]["tests"]
    assert {t["message"] for t in tests} == {"skipped - no-cluster mode"}
    names = {t["name"] for t in tests}
    assert {"nccl-all-reduce-bw", "gpu-operator-version", "gang-scheduling", "platform-health"} <= names
    assert "readiness" not in {t["suite"][0] for t in tests}


def test_round_trip_readiness_fails_on_an_older_cluster(tmp_path: Path) -> None:
    """The guide's failure example: the Dynamo recipe needs Kubernetes 1.34; the inference example
    snapshot is a 1.33 cluster, so readiness fails (exit 2) before any check runs."""
    recipe = tmp_path / "recipe.yaml"
    assert main(["recipe", *INFERENCE, "-o", str(recipe)]) == 0
    snapshot = EXAMPLES / "h100-eks-inference-snapshot.yaml"
    val = cli(
        "validate", "-r", str(recipe), "-s", str(snapshot), "--no-cluster", "-o", str(tmp_path / "c.json")
    )
    assert val.returncode == 2
    assert (
        'readiness constraint failed: name=K8s.server.version expected=">= 1.34" actual=v1.33.5-eks-ba8c9d2'
        in val.stdout + val.stderr
    )
    newer = tmp_path / "snapshot-1.34.yaml"
    newer.write_text(snapshot.read_text().replace("v1.33.5-eks-ba8c9d2", "v1.34.2-eks-0c1d2e3"))
    val = cli(
        "validate", "-r", str(recipe), "-s", str(newer), "--no-cluster", "-o", str(tmp_path / "c2.json")
    )
    assert val.returncode == 0, val.stderr
    assert "inference-perf" in {t["name"] for t in _ctrf(tmp_path / "c2.json")["results"]["tests"]}


def test_snapshot_detects_criteria_and_flags_fill_the_rest(tmp_path: Path) -> None:
    snapshot = EXAMPLES / "h100-eks-training-snapshot.yaml"
    doc = generate_to(tmp_path, "--snapshot", str(snapshot), "--intent", "training", "--platform", "kubeflow")
    assert doc["criteria"] == {
        "service": "eks",
        "accelerator": "h100",
        "intent": "training",
        "os": "ubuntu",
        "platform": "kubeflow",
        "nodes": 3,
    }
    example = yamlio.load((EXAMPLES / "h100-eks-training.yaml").read_bytes())
    example["criteria"]["nodes"] = 3
    assert _strip_version(doc) == _strip_version(example)  # every overlay constraint passes: nothing excluded


def test_flags_override_snapshot_detection_and_exclusions_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(
        (EXAMPLES / "h100-eks-training-snapshot.yaml").read_text().replace("v1.33.5-eks", "v1.31.9-eks")
    )
    out = tmp_path / "r.yaml"
    args = ["recipe", "-s", str(old), "--intent", "training", "--accelerator", "gb200", "-o", str(out)]
    assert main(args) == 0
    doc = yamlio.load(out.read_bytes())
    assert doc["criteria"]["accelerator"] == "gb200"
    assert doc["metadata"]["excludedOverlays"] == [
        {"name": "gb200-eks-ubuntu-training", "reason": "constraint-failed"}
    ]
    err = capsys.readouterr().err
    assert "criteria detected from the snapshot: service=eks, accelerator=h100, os=ubuntu, nodes=3" in err
    assert (
        "overlay gb200-eks-ubuntu-training left out: K8s.server.version expected >= 1.32.4, got "
        "v1.31.9-eks-ba8c9d2" in err
    )


def test_criteria_file_and_flag_precedence(tmp_path: Path) -> None:
    crit = tmp_path / "criteria.yaml"
    crit.write_text(
        "kind: RecipeCriteria\napiVersion: aicr.run/v1alpha2\nmetadata: {name: mine}\n"
        "spec: {service: EKS, accelerator: h100, intent: training, os: ubuntu, nodes: 2}\n"
    )
    doc = generate_to(tmp_path, "--criteria", str(crit), "--platform", "kubeflow", "--nodes", "4")
    assert doc["criteria"] == {
        "service": "eks",
        "accelerator": "h100",
        "intent": "training",
        "os": "ubuntu",
        "platform": "kubeflow",
        "nodes": 4,
    }
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"spec": {"service": "gke", "os": "cos", "accelerator": "h100"}}))
    doc = generate_to(tmp_path, "--criteria", str(bare), name="gke.yaml")
    assert doc["criteria"] == {
        "service": "gke",
        "accelerator": "h100",
        "intent": "any",
        "os": "cos",
        "platform": "any",
    }
    # no intent: no intent overlay matches
    assert doc["metadata"]["appliedOverlays"] == ["base", "h100-any", "gke-cos"]


def test_json_output_and_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recipe", *TRAINING, "--format", "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    example = yamlio.load((EXAMPLES / "h100-eks-training.yaml").read_bytes())
    assert _strip_version(doc) == _strip_version(example)
    assert "written to" not in captured.err


def test_yaml_output_round_trips_with_both_yaml_rule_sets(tmp_path: Path) -> None:
    import yaml

    out = tmp_path / "r.yaml"
    assert main(["recipe", *TRAINING, "-o", str(out)]) == 0
    text = out.read_text()
    assert yaml.safe_load(text) == yamlio.load(text)  # YAML 1.1 and 1.2 readers agree (e.g. "24.04")
    assert "\n  - name: K8s.server.version\n" in text  # sequences indented under their key


def test_data_layering_adds_a_private_service(tmp_path: Path) -> None:
    data = tmp_path / "mydata"
    (data / "overlays").mkdir(parents=True)
    (data / "registry.yaml").write_text("components: []\n")
    (data / "overlays" / "mycloud-training.yaml").write_text(
        "kind: RecipeMetadata\nmetadata: {name: mycloud-training}\n"
        "spec:\n  criteria: {service: mycloud, intent: training}\n"
        "  validation:\n    performance:\n      checks: [nccl-all-reduce-bw]\n"
        "      constraints: [{name: nccl-all-reduce-bw, value: '>= 450'}]\n"
    )
    doc = generate_to(tmp_path, "--data", str(data), "--service", "mycloud", "--intent", "training")
    assert doc["metadata"]["appliedOverlays"] == ["base", "mycloud-training"]
    assert doc["validation"]["performance"]["constraints"] == [
        {"name": "nccl-all-reduce-bw", "value": ">= 450"}
    ]
    assert "gpu-operator" in [r["name"] for r in doc["componentRefs"]]  # the embedded base still applies


def test_no_embedded_data_uses_only_the_given_tree(tmp_path: Path) -> None:
    data = tmp_path / "own"
    (data / "overlays").mkdir(parents=True)
    (data / "registry.yaml").write_text(
        "components:\n  - {name: solo, helm: {defaultRepository: https://charts.example, "
        "defaultVersion: '1.0'}}\n"
    )
    (data / "overlays" / "base.yaml").write_text(
        "kind: RecipeMetadata\nmetadata: {name: base}\nspec: {componentRefs: [{name: solo}]}\n"
    )
    doc = generate_to(tmp_path, "--no-embedded-data", "--data", str(data), "--service", "eks")
    assert [r["name"] for r in doc["componentRefs"]] == ["solo"]
    assert doc["metadata"]["appliedOverlays"] == ["base"]


def test_configmap_output_and_snapshot_input(tmp_path: Path) -> None:
    """-o cm://ns/name stores the recipe the way `validate --recipe cm://…` reads it back, and
    --snapshot cm://… reads a snapshot ConfigMap (a fake API server on loopback)."""
    from aicr_pytest.core.sources import load_yaml_document
    from aicr_pytest.kube import connect
    from aicr_pytest.testing.cluster import FakeCluster

    with FakeCluster(None) as fc:
        kubeconfig = str(fc.kubeconfig_path)
        cluster = connect(kubeconfig)
        snapshot_text = (EXAMPLES / "h100-eks-training-snapshot.yaml").read_text()
        cluster.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "aicr-snapshot", "namespace": "default"},
                "data": {"snapshot.yaml": snapshot_text, "format": "yaml"},
            }
        )
        args = [
            "recipe",
            "-s",
            "cm://default/aicr-snapshot",
            "--intent",
            "training",
            "--platform",
            "kubeflow",
        ]
        assert main([*args, "-o", "cm://default/aicr-recipe", "--kubeconfig", kubeconfig]) == 0
        assert (
            main([*args, "-o", "cm://default/aicr-recipe", "--kubeconfig", kubeconfig, "--format", "json"])
            == 0
        )
        data = cluster.read_configmap("default", "aicr-recipe")
        assert data["format"] == "json" and "snapshot.json" in data
        doc = load_yaml_document("cm://default/aicr-recipe", "recipe", cluster.read_configmap)
        cm = cluster.get("v1", "ConfigMap", "aicr-recipe", "default")
        cluster.close()
    assert isinstance(doc, dict) and doc["criteria"]["nodes"] == 3
    assert cm["metadata"]["labels"]["app.kubernetes.io/component"] == "RecipeResult"
    example = yamlio.load((EXAMPLES / "h100-eks-training.yaml").read_bytes())
    example["criteria"]["nodes"] = 3
    assert _strip_version(doc) == _strip_version(example)


def test_configmap_output_needs_an_existing_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aicr_pytest.testing.cluster import FakeCluster

    with FakeCluster(None) as fc:
        code = main(["recipe", *TRAINING, "-o", "cm://no-such-ns/r", "--kubeconfig", str(fc.kubeconfig_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("aicr-pytest: error: cannot write recipe to cm://no-such-ns/r: ")
    assert "Traceback" not in "\n".join(err)


def test_recipe_help_lists_the_flags() -> None:
    proc = cli("recipe", "--help")
    assert proc.returncode == 0
    flags = "--service --accelerator --gpu --intent --os --platform --nodes --criteria --snapshot --data"
    for flag in [*flags.split(), "--no-embedded-data", "--format", "--output"]:
        assert flag in proc.stdout


@pytest.mark.parametrize(
    ("flag", "value", "applied"),
    [
        ("service", "rke2", ["base"]),
        ("service", "k0s", ["base"]),
        ("service", "generic", ["base"]),
        ("service", "lke", ["base", "lke"]),
        ("service", "bcm", ["base", "bcm"]),
        ("accelerator", "gb300", ["base"]),
        ("accelerator", "vr200", ["base"]),
        ("accelerator", "rtx-pro-6000", ["base", "rtx-pro-6000-any"]),
        ("platform", "nim", ["base"]),
        ("platform", "slurm", ["base"]),
    ],
)
def test_aicr_mains_criteria_values_generate_a_recipe(
    tmp_path: Path, flag: str, value: str, applied: list[str]
) -> None:
    """AICR main's criteria values are accepted by `aicr-pytest recipe` from the embedded data;
    those AICR's recipes give overlays to select their overlays."""
    doc = generate_to(tmp_path, f"--{flag}", value.upper())
    assert doc["criteria"][flag] == value
    assert doc["metadata"]["appliedOverlays"] == applied
