"""A recipe produced by today's upstream ``aicr recipe`` (v1.x: ``apiVersion: aicr.run/v1``, and
``aicr.run/v1beta2`` with ``metadata.selectedProfile`` for a profiled one) validates with the
selection and verdicts upstream gives: every declared check in its phase, in the same order and with
the same verdicts as the guide-era recipe with the same body, and the profile's readiness constraint
on the provider reading.  The checks and gates taken from AICR main give, under an upstream recipe,
the verdicts of the guide-era recipe with the same body, healthy and with each test-kit fault that
targets them.  The recipes are our own test data in the documented shape
(tests/fixtures/upstream/, each naming its source); the remaining differences are listed in the
docs' differences page (docs/differences.md, "Validation runs").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.snapshot.providers import attach
from tests.data_trees import catalog_data_tree

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


#: a NicClusterPolicy in the shape AICR's overlays ship: it makes expected-resources gate on the RDMA
#: fabric its shared-device plugin advertises
NIC_CLUSTER_POLICY = """\
apiVersion: mellanox.com/v1alpha1
kind: NicClusterPolicy
metadata:
  name: nic-cluster-policy
spec:
  rdmaSharedDevicePlugin:
    image: k8s-rdma-shared-dev-plugin
    config: |
      {"configList": [{"resourceName": "hca_shared_devices_a", "rdmaHcaMax": 1000}]}
"""
POLICY_FILE = "components/network-operator/manifests/nic-cluster-policy.yaml"


def rdma_fabric(doc: dict[str, Any]) -> None:
    """The network operator with its NicClusterPolicy, and (to keep the wait short) no other component
    with a readiness signal that needs a minute's dwell."""
    doc["componentRefs"] = [c for c in doc["componentRefs"] if c["name"] == "gpu-operator"]
    doc["componentRefs"].append(
        {
            "name": "network-operator",
            "type": "Helm",
            "source": "https://helm.ngc.nvidia.com/nvidia",
            "version": "26.1.1",
            "manifestFiles": [POLICY_FILE],
        }
    )


def rdma_data(root: Path) -> Path:
    """A data tree with the policy, and expected-resources' budget cut to 5s: the fabric never becomes
    ready, so the check waits its whole budget (in real time: ``--simulate`` runs a real clock)."""
    (root / POLICY_FILE).parent.mkdir(parents=True, exist_ok=True)
    (root / POLICY_FILE).write_text(NIC_CLUSTER_POLICY)
    return catalog_data_tree(root, "expected-resources", timeout="5s")


def on_gke(doc: dict[str, Any]) -> None:
    doc["criteria"]["service"] = "gke"
    doc["componentRefs"].append(
        {
            "name": "gke-nccl-tcpxo",
            "namespace": "kube-system",
            "type": "Helm",
            "source": "https://charts.example.invalid",
            "version": "1.0.0",
        }
    )


def on_gb200(doc: dict[str, Any]) -> None:
    doc["criteria"]["accelerator"] = "gb200"
    if "performance" in doc["validation"]:
        doc["validation"]["performance"]["constraints"] = [
            {"name": "nccl-all-reduce-bw-net", "value": ">= 40"}
        ]


def driver_floor(doc: dict[str, Any]) -> None:
    doc["validation"]["deployment"]["constraints"] = [FLOOR]


NVML_MOCK = (
    r"\[INTERNAL\] GPU verification failed on 4/4 nodes: \[h100-0 \(no proof of execution for pod "
    r"\S+ on node h100-0: NVIDIA's NVML mock simulates its GPUs \(pod nvml-mock/\S+ runs image "
    r"ghcr\.io/nvidia/nvml-mock:\S+\), so no GPU ran the pod \(--allow-fake-nodes accepts simulated nodes\)\)"
)


class Case(NamedTuple):
    profile: str
    faults: list[str]
    phase: str
    checks: list[str]
    edit: Callable[[dict[str, Any]], None] | None
    data: Callable[[Path], Path] | None
    expected: dict[str, tuple[str, str | None]]  # check -> (status, message pattern)


#: the verdicts of the added checks and gates under an upstream recipe, healthy and with each fault of the
#: test kit that targets them (the message patterns are the checks' own, searched from the start)
VERDICT_CASES: dict[str, Case] = {
    "healthy-h100": Case(
        "h100-eks-training",
        [],
        "deployment",
        ["check-nvidia-smi", "gpu-cuda-smoke"],
        driver_floor,
        None,
        {"check-nvidia-smi": ("passed", None), "gpu-cuda-smoke": ("passed", None)},
    ),
    "driver-below-floor": Case(
        "h100-eks-training",
        ["driver-below-floor"],
        "deployment",
        ["check-nvidia-smi"],
        driver_floor,
        None,
        {"check-nvidia-smi": ("failed", r".*host driver version 535\.247\.01 on node \S+ does not satisfy")},
    ),
    "nvml-mock": Case(
        "h100-eks-training",
        ["nvml-mock"],
        "deployment",
        ["check-nvidia-smi"],
        None,
        None,
        {"check-nvidia-smi": ("other", NVML_MOCK)},
    ),
    "uvm-missing": Case(
        "h100-eks-training",
        ["uvm-missing"],
        "deployment",
        ["gpu-cuda-smoke"],
        None,
        None,
        {
            "gpu-cuda-smoke": (
                "failed",
                r"node h100-3: /dev/nvidia-uvm is missing in the CUDA pod \S+ \(CUDA cannot run\)\n"
                r"node h100-3 GPU 0: the CUDA kernel failed: ",
            )
        },
    ),
    "rdma-not-ready": Case(
        "h100-eks-training",
        ["rdma-not-ready"],
        "deployment",
        ["expected-resources"],
        rdma_fabric,
        rdma_data,
        {
            "expected-resources": (
                "failed",
                r".*\[TIMEOUT\] RDMA shared-device fabric \(rdma/hca_shared_devices_a\) across RDMA GPU "
                r"nodes not ready within \d+s: rdma/hca_shared_devices_a not yet allocatable on 1 of 4 "
                r"RDMA GPU node\(s\): \[h100-3\] \(network operator MOFED / RDMA device plugin still "
                r"rolling out\)",
            )
        },
    ),
    "healthy-gke": Case(
        "h100-gke-training",
        [],
        "deployment",
        ["gke-gpu-nic-topology"],
        on_gke,
        None,
        {"gke-gpu-nic-topology": ("passed", None)},
    ),
    "gvnic-displaces-gpu-nic": Case(
        "h100-gke-training",
        ["gvnic-displaces-gpu-nic"],
        "deployment",
        ["gke-gpu-nic-topology"],
        on_gke,
        None,
        {
            "gke-gpu-nic-topology": (
                "failed",
                r'\[CONFLICT\] recipe declares gke-nccl-tcpxo but node "a3mega-3" has unexpected '
                r"interface\(s\) beyond eth0\.\.eth8: gve1 \(gVNIC displacement signature\)",
            )
        },
    ),
    # gang-scheduling's pass (KAI) is the healthy test's above; with Kueue its negative case waits out
    # a real minute, left to tests/cluster's virtual time
    "healthy-sandboxing": Case(
        "h100-eks-training",
        [],
        "conformance",
        ["workload-sandboxing"],
        None,
        None,
        # no profile has a sandboxed RuntimeClass: workload-sandboxing skips
        {
            "workload-sandboxing": (
                "skipped",
                r"no sandboxed RuntimeClass \(looked for handlers runsc, gvisor \(gVisor\), kata\* \(Kata "
                r"Containers\); found: none\)$",
            )
        },
    ),
    "gang-partial-admission": Case(
        "h100-eks-training",
        ["gang-partial-admission"],
        "conformance",
        ["gang-scheduling"],
        None,
        None,
        {
            "gang-scheduling": (
                "failed",
                r"\[CONFLICT\] Kueue admitted Workload job-[a-z0-9-]+ of the oversized gang Job [a-z0-9-]+ "
                r"beyond the queue quota$",
            )
        },
    ),
    "sandbox-kernel-shared": Case(
        "h100-eks-training",
        ["sandbox-kernel-shared"],
        "conformance",
        ["workload-sandboxing"],
        None,
        None,
        {
            "workload-sandboxing": (
                "failed",
                r"\[CONFLICT\] RuntimeClass gvisor \(handler runsc\) ran the probe pod on its node's kernel "
                r"\S+ \(node h100-0\): not sandboxed$",
            )
        },
    ),
    "healthy-gb200": Case(
        "gb200-eks-training",
        [],
        "conformance",
        ["dra-support"],
        on_gb200,
        None,
        {"dra-support": ("passed", None)},
    ),
    "imex-channel-missing": Case(
        "gb200-eks-training",
        ["imex-channel-missing"],
        "conformance",
        ["dra-support"],
        on_gb200,
        None,
        {
            "dra-support": (
                "failed",
                r"\[INTERNAL\] IMEX channel test pod phase=Failed \(want Succeeded\) — ComputeDomain IMEX "
                r"channel allocation failed or the pod did not observe exactly one channel device: pod \S+ "
                r"on node gb200-0 saw 0 IMEX channel devices$",
            )
        },
    ),
    "driver-r595": Case(
        "gb200-eks-training",
        ["driver-r595"],
        "performance",
        ["nccl-all-reduce-bw-net"],
        on_gb200,
        None,
        {
            "nccl-all-reduce-bw-net": (
                "failed",
                r"GPUDirect RDMA cannot be verified on GPU nodes running driver R595 or later: "
                r"gb200-3 \(driver 595\.58\.03\)\. ",
            )
        },
    ),
}


def masked(found: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Verdicts with what differs between two runs masked: run ids, and generated name suffixes."""
    return [(n, s, re.sub(r"[0-9a-f]{6,}|(?<=-)[a-z0-9]{5}\b", "*", m)) for n, s, m in found]


def as_guide_recipe(doc: dict[str, Any]) -> dict[str, Any]:
    """The same recipe body under the guide-era header (``aicr.run/v1alpha2``, version ``dev``)."""
    guide = yamlio.load(GUIDE.read_text())
    return {**doc, "apiVersion": guide["apiVersion"], "metadata": {**doc["metadata"], **guide["metadata"]}}


@pytest.mark.parametrize("case", list(VERDICT_CASES))
def test_the_added_checks_give_the_same_verdicts_under_an_upstream_recipe(tmp_path: Path, case: str) -> None:
    profile, faults, phase, checks, edit, data, expected = VERDICT_CASES[case]
    doc = yamlio.load(V1.read_text())
    doc["validation"] = {phase: {"checks": checks}}
    if edit is not None:
        edit(doc)
    extra = ["--phase", phase, "--simulate", profile, *(f"--fault={fault}" for fault in faults)]
    if data is not None:
        extra += ["--data", str(data(tmp_path / "data"))]
    got: dict[str, list[tuple[str, str, str]]] = {}
    for shape, body in (("upstream", doc), ("guide", as_guide_recipe(doc))):
        path = tmp_path / f"{shape}.yaml"
        path.write_text(yamlio.dump(body))
        proc = cli("-r", str(path), "-s", str(SNAPSHOT), *extra, tmp=tmp_path)
        assert proc.returncode in (0, 8), proc.stderr[-3000:]
        got[shape] = verdicts(json.loads(proc.stdout))
    # the guide-era recipe with the same body gives the same verdicts
    assert masked(got["upstream"]) == masked(got["guide"])
    assert [name for name, _, _ in got["upstream"]] == checks
    for name, status, message in got["upstream"]:
        want_status, pattern = expected[name]
        assert status == want_status, f"{name}: {status}: {message}"
        if pattern is None:
            assert message == "", f"{name}: {message}"
        else:
            assert re.match(pattern, message, re.DOTALL), f"{name}: {message}"
