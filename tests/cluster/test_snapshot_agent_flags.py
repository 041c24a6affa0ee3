"""``aicr-pytest snapshot``'s agent flags and ``NetworkTopology``, as users run them on the simulated cluster.

Each agent flag is read back from the Job the fake cluster holds (``--no-cleanup`` keeps it); the
template's output is the file ``--output`` names; the ``gb300-eks-roce-training`` profile's
ConnectX hosts give a ``NetworkTopology`` that readiness constraints resolve against, and the H100
profile (EFA only) gives none, so the same constraints fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.cli import main
from aicr_pytest.core.inputs import evaluate_readiness
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.core.snapshot import load_snapshot_text
from aicr_pytest.kube import RUN_ID_LABEL
from aicr_pytest.testing import FakeCluster, FakeClusterFactory

AGENT = "app.kubernetes.io/name=aicr-pytest-snapshot-agent"


@pytest.fixture
def h100(aicr_fake_cluster_factory: FakeClusterFactory) -> FakeCluster:
    return aicr_fake_cluster_factory("h100-eks-training", auto_advance=True)


@pytest.fixture
def gb300(aicr_fake_cluster_factory: FakeClusterFactory) -> FakeCluster:
    return aicr_fake_cluster_factory("gb300-eks-roce-training", auto_advance=True)


def kept_job(fc: FakeCluster) -> dict[str, Any]:
    (job,) = fc.list("batch/v1", "Job", label_selector=AGENT)
    assert job["metadata"]["labels"][RUN_ID_LABEL]
    return job


def test_every_agent_flag_reaches_the_job(h100: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "snapshot",
        "-k",
        str(h100.kubeconfig_path),
        "--runtime-class",
        "nvidia",
        "--requests",
        "cpu=500m, memory=1Gi,,ephemeral-storage=1Gi",
        "--limits",
        "memory=2Gi,nvidia.com/gpu=2",
        "--image-pull-secret",
        "regcred",
        "--image-pull-secret",
        "mirror",
        "--job-name",
        "gpu-audit",
        "--service-account-name",
        "snapshot-agent",
        "--no-cleanup",
    ]
    assert main(argv) == 0
    capsys.readouterr()
    job = kept_job(h100)
    assert job["metadata"]["name"].startswith("gpu-audit-")
    pod = job["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["serviceAccountName"] == "snapshot-agent" and pod["automountServiceAccountToken"] is False
    assert pod["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}]
    assert pod["containers"][0]["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
        "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "2"},
    }


def test_defaults_and_the_environment(
    h100: FakeCluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AICR_RUNTIME_CLASS", "nvidia-cdi")
    monkeypatch.setenv("AICR_LIMITS", "cpu=2")
    assert main(["snapshot", "-k", str(h100.kubeconfig_path), "--no-cleanup"]) == 0
    capsys.readouterr()
    job = kept_job(h100)
    assert job["metadata"]["name"].startswith("aicr-snapshot-")
    pod = job["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia-cdi"
    assert "serviceAccountName" not in pod and "imagePullSecrets" not in pod
    assert pod["containers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "64Mi"},
        "limits": {"cpu": "2", "memory": "256Mi"},
    }


def test_require_gpu_adds_one_gpu_unless_limits_name_it(
    h100: FakeCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot", "-k", str(h100.kubeconfig_path), "--require-gpu", "--no-cleanup"]) == 0
    capsys.readouterr()
    limits = kept_job(h100)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"cpu": "1", "memory": "256Mi", "nvidia.com/gpu": "1"}


def test_template_renders_the_snapshot_to_the_output(
    h100: FakeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tmp_path / "report.md.j2"
    template.write_text(
        "# {{ metadata['source-node'] }}\n"
        "{% for m in measurements %}"
        "- {{ m.type }}: {{ m.subtypes | map(attribute='subtype') | join(', ') }}\n"
        "{% endfor %}{{ snapshot.kind }}\n"
    )
    out = tmp_path / "report.md"
    argv = ["snapshot", "-k", str(h100.kubeconfig_path), "--template", str(template), "-o", str(out)]
    assert main(argv) == 0
    node = capsys.readouterr().err.splitlines()[-1].split(" node ")[1].split(",")[0]
    lines = out.read_text().splitlines()
    assert lines[0] == f"# {node}"
    assert "- GPU: hardware, smi" in lines and lines[-1] == "Snapshot"


def test_a_template_that_fails_while_rendering_is_exit_8(
    h100: FakeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tmp_path / "bad.j2"
    template.write_text("{{ no_such_field }}\n")
    out = tmp_path / "report.md"
    assert (
        main(["snapshot", "-k", str(h100.kubeconfig_path), "--template", str(template), "-o", str(out)]) == 8
    )
    err = capsys.readouterr().err.splitlines()
    why = "'no_such_field' is undefined"
    assert err[-1] == f"aicr-pytest: error: [INTERNAL] failed to execute template {template}: {why}"
    assert not out.exists()
    assert h100.list("batch/v1", "Job", label_selector=AGENT) == []  # cleaned up all the same


RECIPE = {
    "kind": "RecipeResult",
    "apiVersion": "aicr.run/v1alpha2",
    "criteria": {"service": "eks", "accelerator": "gb300", "intent": "training"},
    "constraints": [
        {"name": "NetworkTopology.identity.rail-count", "value": ">= 4"},
        {"name": "NetworkTopology.capabilities.rdma", "value": "true"},
        {"name": "NetworkTopology.pfs[rail=0].traffic", "value": "east-west"},
        {"name": "NetworkTopology.pfs[0].gpuProximity", "value": "PIX"},
    ],
    "componentRefs": [],
    "deploymentOrder": [],
}


def captured(fc: FakeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "snapshot.yaml"
    assert main(["snapshot", "-k", str(fc.kubeconfig_path), "-o", str(out)]) == 0
    assert "WARNING" not in capsys.readouterr().err
    return out.read_text()


def test_network_topology_constraints_pass_on_a_connectx_node(
    gb300: FakeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = load_snapshot_text(captured(gb300, tmp_path, capsys), "snapshot.yaml")
    assert snap.types() == ["K8s", "GPU", "OS", "SystemD", "NodeTopology", "NetworkTopology"]
    assert snap.lookup("NetworkTopology.identity.pf-count") == "4"
    assert snap.lookup("NetworkTopology.pfs[rail=3].connectedGPU") == "GPU3"
    assert snap.lookup("NetworkTopology.kernel-modules.thirdParty.0") == "nvidia_peermem"
    recipe, _ = parse_recipe(RECIPE, "recipe.yaml")
    results = evaluate_readiness(recipe, snap).results
    assert [(r.name, r.passed, r.actual) for r in results] == [
        ("NetworkTopology.identity.rail-count", True, "4"),
        ("NetworkTopology.capabilities.rdma", True, "true"),
        ("NetworkTopology.pfs[rail=0].traffic", True, "east-west"),
        ("NetworkTopology.pfs[0].gpuProximity", True, "PIX"),
    ]


def test_network_topology_constraints_fail_closed_without_the_measurement(
    h100: FakeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = load_snapshot_text(captured(h100, tmp_path, capsys), "snapshot.yaml")
    assert "NetworkTopology" not in snap.types()  # EFA only: no NVIDIA network PF
    recipe, _ = parse_recipe(RECIPE, "recipe.yaml")
    outcome = evaluate_readiness(recipe, snap)
    assert [r.passed for r in outcome.results] == [False] * 4
    assert outcome.blocking_failures
    assert {r.error for r in outcome.results} == {
        "value not found in snapshot: measurement type not found in snapshot: type=NetworkTopology"
    }
