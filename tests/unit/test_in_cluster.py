"""In-cluster mode: when the pod's service account is used, and the header line that says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest.kube import kubeconfig
from aicr_pytest.report.terminal import header_line

POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.fixture
def pod_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_text("c")
    monkeypatch.setattr(kubeconfig, "_IN_CLUSTER_TOKEN", str(tmp_path / "token"))
    monkeypatch.setattr(kubeconfig, "_IN_CLUSTER_CA", str(tmp_path / "ca.crt"))
    return tmp_path


def test_in_a_pod_without_a_kubeconfig_the_service_account_is_used(pod_files: Path) -> None:
    assert kubeconfig.in_cluster(None, POD)
    assert not kubeconfig.in_cluster("/some/kubeconfig", POD)  # --kubeconfig wins
    assert not kubeconfig.in_cluster(None, {**POD, "KUBECONFIG": "/k"})  # so does $KUBECONFIG
    assert not kubeconfig.in_cluster(None, {})  # not in a pod
    (pod_files / "ca.crt").unlink()
    assert not kubeconfig.in_cluster(None, POD)  # no CA: not a usable service account


def test_the_header_line_says_so() -> None:
    line = header_line(
        "recipe r", snapshot=None, no_cluster=False, simulated=None, run_id="abc", in_cluster=True
    )
    assert (
        line == "aicr-pytest: recipe r | snapshot none | live cluster (in-cluster service account) | run abc"
    )
    plain = header_line("recipe r", snapshot=None, no_cluster=False, simulated=None, run_id="abc")
    assert "| live cluster |" in plain


def test_the_configuration_comes_from_the_pod(pod_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    for name, value in POD.items():
        monkeypatch.setenv(name, value)
    cfg, source = kubeconfig.load_configuration(None, None)
    assert (source, cfg.host, cfg.ssl_ca_cert) == (
        "in-cluster service account",
        "https://10.0.0.1:443",
        str(pod_files / "ca.crt"),
    )
    with pytest.raises(
        kubeconfig.UsageError, match=r"^--context cannot be used with the in-cluster service account$"
    ):
        kubeconfig.load_configuration(None, "ctx")
