"""A recipe produced by today's upstream ``aicr recipe`` (v1.x: ``apiVersion: aicr.run/v1``, and
``aicr.run/v1beta2`` with ``metadata.selectedProfile`` for a profiled one) validates with the
selection and verdicts upstream gives: every declared check in its phase, in the same order and with
the same verdicts as the guide-era recipe with the same body, and the profile's readiness constraint
on the provider reading.  The recipes are our own test data in the documented shape
(tests/fixtures/upstream/, each naming its source); the remaining differences are listed in the
docs' differences page (docs/differences.md, "Validation runs").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.snapshot.providers import attach

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "upstream"
V1 = FIXTURES / "aicr-v1-h100-eks-ubuntu-training-kubeflow.yaml"
GUIDE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"

#: what the training leaf declares, per phase in run order (upstream runs deployment, conformance,
#: performance; within a phase the catalog's order)
SELECTION = {
    "deployment": ["operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"],
    "conformance": [
        "dra-support",
        "gang-scheduling",
        "accelerator-metrics",
        "ai-service-metrics",
        "pod-autoscaling",
        "cluster-autoscaling",
        "robust-controller",
        "secure-accelerator-access",
        "gpu-operator-health",
        "platform-health",
    ],
    "performance": ["nccl-all-reduce-bw"],
}


#: the components the operator-managed AKS stack deploys, in upstream's order
AKS_COMPONENTS = (
    "cert-manager",
    "kube-prometheus-stack",
    "gpu-operator",
    "kai-scheduler",
    "nvidia-dra-driver-gpu",
    "prometheus-adapter",
)


def aks_profiled_recipe(reference_dir: Path, tmp: Path) -> Path:
    """What ``aicr recipe --service aks --accelerator h100 --os ubuntu --intent training --profile
    gpuStack=operator-managed`` writes in upstream v1.3 (its documented output structure: a profiled
    result is ``aicr.run/v1beta2`` and records ``metadata.selectedProfile``; operator-managed owns the
    GPU Operator's driver and toolkit and adds ``K8s.aks-gpu-pools.gpu-driver = None``), built from
    AICR's AKS training example read in place rather than kept as a copy."""
    doc = yamlio.load((reference_dir / "aicr" / "examples" / "recipes" / "aks-training.yaml").read_text())
    doc["apiVersion"] = "aicr.run/v1beta2"
    doc["metadata"]["version"] = "v1.3.0"
    doc["metadata"]["selectedProfile"] = {
        "name": "gpuStack",
        "value": "operator-managed",
        "ownedPaths": {
            "gpu-operator": ["driver.enabled", "enabled", "operator.runtimeClass", "toolkit.enabled"],
            "nvidia-dra-driver-gpu": ["enabled", "nvidiaDriverRoot"],
        },
    }
    doc["constraints"].append({"name": "K8s.aks-gpu-pools.gpu-driver", "value": "None"})
    doc["componentRefs"] = [c for c in doc["componentRefs"] if c["name"] in AKS_COMPONENTS]
    doc["deploymentOrder"] = [name for name in doc["deploymentOrder"] if name in AKS_COMPONENTS]
    path = tmp / "aks-operator-managed.yaml"
    path.write_text(yamlio.dump(doc))
    return path


def cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AICR_", "KUBECONFIG"))}
    return subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", "validate", *args],
        capture_output=True,
        text=True,
        env={**env, "TMPDIR": str(tmp)},
        timeout=300,
        check=False,
    )


def selection(report: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for test in report["results"]["tests"]:
        out.setdefault(test["suite"][0], []).append(test["name"])
    return out


def verdicts(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(t["name"], t["status"], t.get("message", "")) for t in report["results"]["tests"]]


def test_the_upstream_header_is_read_and_selects_every_declared_check(tmp_path: Path) -> None:
    proc = cli("-r", str(V1), "-s", str(SNAPSHOT), "--no-cluster", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    got = selection(report)
    assert {phase: sorted(names) for phase, names in got.items()} == {
        phase: sorted(names) for phase, names in SELECTION.items()
    }
    assert list(got) == ["deployment", "conformance", "performance"]
    assert {status for _, status, _ in verdicts(report)} == {"skipped"}
    assert {message for _, _, message in verdicts(report)} == {"skipped - no-cluster mode"}
    guide = cli("-r", str(GUIDE), "-s", str(SNAPSHOT), "--no-cluster", tmp=tmp_path)
    assert verdicts(json.loads(guide.stdout)) == verdicts(report)  # the header changes nothing
    # AICR warns about the version skew too (recipe v1.3.0, snapshot v0.12.0, this binary)
    assert "warning: version skew detected across validate inputs" in proc.stderr


def test_on_a_healthy_cluster_the_verdicts_are_upstreams(tmp_path: Path) -> None:
    proc = cli("-r", str(V1), "-s", str(SNAPSHOT), "--simulate", "h100-eks-training", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert [(t["suite"][0], t["name"], t["status"]) for t in report["results"]["tests"]] == [
        (phase, name, "passed") for phase, names in SELECTION.items() for name in names
    ]
    measured = r"^nccl-all-reduce-bw: bus bandwidth [\d.]+ GB/s against >= 300 \(bound 270 after tolerance\)"
    measured += r": passed$"
    assert re.search(measured, proc.stderr, re.MULTILINE), proc.stderr[-3000:]


def aks_snapshot(tmp: Path, driver: str) -> Path:
    """The example snapshot as `aicr snapshot --aks-gpu-pools` would have recorded it."""
    doc = yamlio.load(SNAPSHOT.read_text())
    attach(doc, [{"subtype": "aks-gpu-pools", "data": {"gpu-driver": driver, "gpu-pool-count": 1}}])
    path = tmp / f"snapshot-{driver}.yaml"
    path.write_text(yamlio.dump(doc))
    return path


def test_a_profiled_recipe_is_qualified_by_the_pool_reading(tmp_path: Path, reference_dir: Path) -> None:
    aks = aks_profiled_recipe(reference_dir, tmp_path)
    ok = cli("-r", str(aks), "-s", str(aks_snapshot(tmp_path, "None")), "--no-cluster", tmp=tmp_path)
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert 'readiness constraint passed: name=K8s.aks-gpu-pools.gpu-driver expected="None" actual=None' in (
        ok.stderr.splitlines()
    )
    assert {phase: sorted(n) for phase, n in selection(json.loads(ok.stdout)).items()} == {
        phase: sorted(n) for phase, n in SELECTION.items()
    }
    # pools that install the driver do not qualify operator-managed: readiness blocks (exit 2)
    wrong = cli("-r", str(aks), "-s", str(aks_snapshot(tmp_path, "Install")), "--no-cluster", tmp=tmp_path)
    assert wrong.returncode == 2
    assert (
        'readiness constraint failed: name=K8s.aks-gpu-pools.gpu-driver expected="None" actual=Install'
        in wrong.stderr.splitlines()
    )
    # a snapshot captured without --aks-gpu-pools: fails closed, as upstream's readiness does
    missing = cli("-r", str(aks), "-s", str(SNAPSHOT), "--no-cluster", tmp=tmp_path)
    assert missing.returncode == 2
    assert any(
        line.startswith("readiness constraint failed: name=K8s.aks-gpu-pools.gpu-driver ")
        and "value not found in snapshot" in line
        for line in missing.stderr.splitlines()
    )


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            lambda d: d["metadata"].pop("selectedProfile"),
            "recipe {path}: apiVersion aicr.run/v1beta2 requires metadata.selectedProfile or "
            "configuration.slurm.accounting",
        ),
        (
            lambda d: d.update(
                apiVersion="aicr.run/v1", configuration={"slurm": {"accounting": {"mode": "disabled"}}}
            ),
            "recipe {path}: configuration.slurm.accounting requires apiVersion aicr.run/v1beta2, "
            "not aicr.run/v1",
        ),
    ],
)
def test_an_incoherent_upstream_header_is_one_line(
    tmp_path: Path, reference_dir: Path, change: Any, line: str
) -> None:
    doc = yamlio.load(aks_profiled_recipe(reference_dir, tmp_path).read_text())
    change(doc)
    path = tmp_path / "r.yaml"
    path.write_text(yamlio.dump(doc))
    proc = cli("-r", str(path), "-s", str(SNAPSHOT), "--no-cluster", tmp=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["ERROR: " + line.format(path=path)]


#: the checks and gates added from today's AICR main and the CNCF suite, each with the phase an
#: upstream recipe declares it in (aicr-pytest's own gpu-cuda-smoke and the CNCF SHOULD
#: workload-sandboxing run when a recipe names them, as upstream runs every declared check)
ADDED_CHECKS = {
    "deployment": ["expected-resources", "check-nvidia-smi", "gke-gpu-nic-topology", "gpu-cuda-smoke"],
    "conformance": ["dra-support", "gang-scheduling", "workload-sandboxing"],
}
#: check-nvidia-smi's host-driver floor (AICR #1995, PR #2257)
FLOOR = {"name": "Deployment.gpu-driver.version", "value": ">= 580.0"}


def added_checks_recipe(tmp: Path) -> Path:
    """The upstream v1 training recipe declaring every added check, and the driver floor."""
    doc = yamlio.load(V1.read_text())
    for phase, names in ADDED_CHECKS.items():
        block = doc["validation"].setdefault(phase, {})
        block["checks"] = [*block.get("checks", []), *(n for n in names if n not in block.get("checks", []))]
    doc["validation"]["deployment"].setdefault("constraints", []).append(FLOOR)
    path = tmp / "aicr-v1-added-checks.yaml"
    path.write_text(yamlio.dump(doc))
    return path


def test_every_added_check_an_upstream_recipe_declares_is_selected(tmp_path: Path) -> None:
    # equivalence: a declared check is never dropped or moved to another phase
    proc = cli("-r", str(added_checks_recipe(tmp_path)), "-s", str(SNAPSHOT), "--no-cluster", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = selection(json.loads(proc.stdout))
    for phase, names in ADDED_CHECKS.items():
        missing = [n for n in names if n not in got.get(phase, [])]
        assert missing == [], f"{phase}: declared but not run: {missing}"
    for phase, names in SELECTION.items():  # and nothing the leaf declared before is lost
        assert set(names) <= set(got[phase])


def test_the_driver_floor_of_an_upstream_recipe_is_enforced(tmp_path: Path) -> None:
    doc = yamlio.load(added_checks_recipe(tmp_path).read_text())
    doc["validation"] = {"deployment": {**doc["validation"]["deployment"], "checks": ["check-nvidia-smi"]}}
    (tmp_path / "floor.yaml").write_text(yamlio.dump(doc))
    recipe = str(tmp_path / "floor.yaml")
    args = ("-r", recipe, "-s", str(SNAPSHOT), "--phase", "deployment", "--simulate", "h100-eks-training")
    healthy = cli(*args, tmp=tmp_path)
    tests = {t["name"]: t for t in json.loads(healthy.stdout)["results"]["tests"]}
    assert tests["check-nvidia-smi"]["status"] == "passed", tests["check-nvidia-smi"].get("message")
    below = cli(*args, "--fault", "driver-below-floor", tmp=tmp_path)
    tests = {t["name"]: t for t in json.loads(below.stdout)["results"]["tests"]}
    assert tests["check-nvidia-smi"]["status"] == "failed"
    assert "host driver version 535.247.01 on node" in tests["check-nvidia-smi"]["message"]
    assert "does not satisfy" in tests["check-nvidia-smi"]["message"]
