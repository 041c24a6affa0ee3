"""``aicr-pytest snapshot`` as users run it, against the simulated cluster.

In-process against a FakeCluster (the fake moves its clock while the command waits in a watch), and
the documented workflow in real processes: ``aicr-pytest simulate`` serves the ``h100-eks-training``
profile, ``aicr-pytest snapshot`` captures it, ``aicr-pytest validate --no-cluster`` evaluates the H100
example recipe's readiness against the captured file (docs/snapshot.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aicr_pytest.cli import main
from aicr_pytest.core.snapshot import load_snapshot_text
from aicr_pytest.testing import FakeClusterFactory

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"


@pytest.fixture
def kubeconfig(aicr_fake_cluster_factory: FakeClusterFactory) -> str:
    return str(aicr_fake_cluster_factory("h100-eks-training", auto_advance=True).kubeconfig_path)


def test_snapshot_to_stdout_is_the_document_only(kubeconfig: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "-k", kubeconfig]) == 0
    captured = capsys.readouterr()
    snap = load_snapshot_text(captured.out, "stdout")
    assert snap.lookup("OS.release.ID") == "ubuntu" and snap.source_node == snap.lookup(
        "K8s.node.source-node"
    )
    assert (
        captured.err.splitlines()[-1] == f"snapshot: captured from node {snap.source_node}, written to stdout"
    )
    assert "WARNING" not in captured.err


def test_snapshot_as_json_with_truncated_topology(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snapshot.json"
    argv = ["snapshot", "-k", kubeconfig, "--format", "json", "-o", str(out), "--max-nodes-per-entry", "2"]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["kind"] == "Snapshot" and doc["apiVersion"] == "aicr.run/v1alpha2"
    snap = load_snapshot_text(out.read_bytes(), str(out), format="json")
    assert snap.lookup("NodeTopology.label.nvidia.com/gpu.present") == "true|h100-0,h100-1 (+2 more)"
    assert snap.lookup("NodeTopology.summary.node-count") == "5"
    assert capsys.readouterr().out == ""


def test_snapshot_with_provider_data(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--gke-gpu-pools/--oke-addons (as `aicr snapshot`): the readings join the K8s measurement."""
    gke = tmp_path / "gke.json"
    gke.write_text(json.dumps([{"name": "a3", "config": {"accelerators": [{"acceleratorType": "h100"}]}}]))
    oke = tmp_path / "oke.json"
    oke.write_text(json.dumps({"data": [{"name": "CoreDNS", "lifecycle-state": "ACTIVE"}]}))
    out = tmp_path / "snapshot.yaml"
    argv = [
        "snapshot",
        "-k",
        kubeconfig,
        "--gke-gpu-pools",
        str(gke),
        "--oke-addons",
        str(oke),
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    snap = load_snapshot_text(out.read_text(), str(out))
    assert snap.lookup("K8s.gke-gpu-pools.gpu-driver-installation") == "Installed"
    assert snap.lookup("K8s.gke-gpu-pools.gpu-pools") == "a3=Installed"
    assert snap.lookup("K8s.oke-addons.nvidia-gpu-plugin") == "absent"
    assert snap.lookup("K8s.server.version")  # the captured readings are all still there
    assert capsys.readouterr().out == ""


def test_the_workflow_on_the_simulated_cluster(tmp_path: Path) -> None:
    """`simulate` in the background, then `snapshot` and `validate` as separate processes."""
    kubeconfig = tmp_path / "kubeconfig"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AICR_", "KUBECONFIG"))}
    cli = [sys.executable, "-m", "aicr_pytest.cli"]
    serve = [
        *cli,
        "simulate",
        "--profile",
        "h100-eks-training",
        "--kubeconfig",
        str(kubeconfig),
        "--for",
        "120",
    ]
    server = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:  # the kubeconfig line comes once the server listens
            if line.startswith("SIMULATED kubeconfig:"):
                break
        assert kubeconfig.exists(), "the simulated cluster did not start"
        snapshot = tmp_path / "snapshot.yaml"
        captured = subprocess.run(
            [*cli, "snapshot", "-k", str(kubeconfig), "-o", str(snapshot)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert captured.returncode == 0, captured.stderr
        assert f"written to {snapshot}" in captured.stderr.splitlines()[-1]
        validated = subprocess.run(
            [*cli, "validate", "--recipe", str(RECIPE), "--snapshot", str(snapshot), "--no-cluster"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert validated.returncode == 0, validated.stderr[-3000:]
        report = json.loads(validated.stdout)
        assert report["results"]["summary"]["failed"] == 0
    finally:
        server.terminate()
        server.wait(30)
