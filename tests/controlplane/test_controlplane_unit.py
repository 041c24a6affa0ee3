"""Control-plane helpers that need no binaries: pinned versions, node profiles, PKI, skip/fail policy."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import controlplane as cpmod
from tests.harness.controlplane_fixtures import REQUIRE_ENV, skip_or_fail

REPO = Path(__file__).resolve().parents[2]


def test_pinned_versions_agree_with_go_mod_and_build_script() -> None:
    go_mod = (REPO / "tools" / "controlplane" / "go.mod").read_text()
    assert re.search(rf"^require k8s\.io/kubernetes {re.escape(cpmod.K8S_VERSION)}$", go_mod, re.M)
    staging = "v0." + cpmod.K8S_VERSION.removeprefix("v1.")
    replaces = re.findall(r"^\t(k8s\.io/\S+) => (k8s\.io/\S+) (\S+)$", go_mod, re.M)
    assert len(replaces) > 20
    assert all(a == b and v == staging for a, b, v in replaces)
    script = (REPO / "scripts" / "controlplane.sh").read_text()
    assert f'KWOK_VERSION="{cpmod.KWOK_VERSION}"' in script


def test_binary_dir_env_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AICR_CONTROLPLANE_BIN", raising=False)
    monkeypatch.setenv("AICR_CONTROLPLANE_CACHE", str(tmp_path))
    assert cpmod.binary_dir() == tmp_path / "bin"
    monkeypatch.setenv("AICR_CONTROLPLANE_BIN", str(tmp_path / "x"))
    assert cpmod.binary_dir() == tmp_path / "x"
    monkeypatch.delenv("AICR_CONTROLPLANE_BIN")
    monkeypatch.delenv("AICR_CONTROLPLANE_CACHE")
    assert cpmod.binary_dir().parts[-2:] == (cpmod.K8S_VERSION, "bin")


def test_missing_binaries_name_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "kwok").write_text("#!/bin/sh\n")
    (tmp_path / "kwok").chmod(0o755)
    with pytest.raises(cpmod.ControlPlaneUnavailable, match="kube-apiserver") as e:
        cpmod.find_binaries(tmp_path)
    assert "kwok," not in str(e.value)
    assert "scripts/controlplane.sh build" in str(e.value)


def test_skip_or_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no binaries"):
        skip_or_fail("no binaries")
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="AICR_REQUIRE_CONTROLPLANE=1"):
        skip_or_fail("no binaries")


def test_h100_node_profile() -> None:
    nodes = cpmod.H100_NODES.manifests()
    assert [n["metadata"]["name"] for n in nodes] == ["gpu-h100-0", "gpu-h100-1"]
    node = nodes[0]
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert node["metadata"]["labels"]["nvidia.com/gpu.count"] == "8"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    system = cpmod.SYSTEM_NODES.manifests()[0]
    assert "nvidia.com/gpu" not in system["status"]["allocatable"]
    assert system["spec"]["taints"] == []


def test_gb200_node_profile_matches_the_fake_gb200_pool() -> None:
    from aicr_pytest.testing.profiles import gb200_eks_training

    (fake,) = gb200_eks_training().gpu_pools()
    nodes = cpmod.GB200_NODES.manifests()
    assert [n["metadata"]["name"] for n in nodes] == ["gpu-gb200-0", "gpu-gb200-1"]
    node = nodes[0]
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == fake.gpu_product == "NVIDIA-GB200"
    assert labels["nvidia.com/gpu.clique"] == fake.labels["nvidia.com/gpu.clique"]
    assert labels["node.kubernetes.io/instance-type"] == fake.instance_type
    assert labels["kubernetes.io/arch"] == node["status"]["nodeInfo"]["architecture"] == "arm64"
    assert labels["nvidia.com/gpu.count"] == node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert fake.gpus_per_node == 4
    assert (
        node["status"]["allocatable"]["vpc.amazonaws.com/efa"]
        == fake.extra_resources["vpc.amazonaws.com/efa"]
    )
    assert labels["aicr.test/pool"] == "gpu-gb200"  # not "gpu": H100 GPU DaemonSets select that
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert cpmod.H100_NODES.manifests()[0]["status"]["nodeInfo"]["architecture"] == "amd64"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl command not installed")
def test_generated_pki_is_valid(tmp_path: Path) -> None:
    pki = cpmod.generate_pki(tmp_path)
    verify = subprocess.run(
        ["openssl", "verify", "-CAfile", str(pki.ca_cert), str(pki.serving_cert)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stderr
    text = subprocess.run(
        ["openssl", "x509", "-in", str(pki.serving_cert), "-noout", "-ext", "subjectAltName"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text
    assert pki.sa_key.stat().st_mode & 0o077 == 0


def test_kubeconfig_shape(tmp_path: Path) -> None:
    import yaml

    path = cpmod.write_kubeconfig(
        tmp_path / "k", server="https://127.0.0.1:1", ca_cert=tmp_path / "ca.crt", user="u", token="t"
    )
    config = yaml.safe_load(path.read_text())
    assert config["current-context"] == "u"
    assert config["users"] == [{"name": "u", "user": {"token": "t"}}]
