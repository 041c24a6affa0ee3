"""`aicr-pytest simulate` serves HTTPS with a CA in its kubeconfig.

kubectl and client-go send a bearer token only over TLS, so a plain-http simulator made every
printed ``--no-cleanup`` command fail.  The kubernetes client verifies the server against the CA
the kubeconfig carries; a client that does not trust that CA is refused.
"""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from aicr_pytest.kube.client import connect
from aicr_pytest.kube.wait import wait_for_pod_phase
from aicr_pytest.testing.serve import simulated_cluster

PROFILE = "h100-eks-training"


def _kubeconfig(path: Path) -> dict[str, object]:
    data: dict[str, object] = yaml.safe_load(path.read_text())
    return data


def test_kubeconfig_carries_the_ca_and_an_https_server(tmp_path: Path) -> None:
    with simulated_cluster(PROFILE, kubeconfig=tmp_path / "kubeconfig") as sim:
        cfg = _kubeconfig(sim.kubeconfig_path)
        (entry,) = cfg["clusters"]  # type: ignore[misc]
        cluster = entry["cluster"]
        assert cluster["server"].startswith("https://127.0.0.1:")
        ca = base64.b64decode(cluster["certificate-authority-data"])
        assert ca.startswith(b"-----BEGIN CERTIFICATE-----")
        assert "insecure-skip-tls-verify" not in cluster


def test_kubernetes_client_verifies_the_ca_and_sends_the_token(tmp_path: Path) -> None:
    from kubernetes import client, config

    with simulated_cluster(PROFILE, kubeconfig=tmp_path / "kubeconfig") as sim:
        api = config.new_client_from_config(config_file=str(sim.kubeconfig_path))  # type: ignore[no-untyped-call]
        assert api.configuration.verify_ssl is True
        nodes = client.CoreV1Api(api).list_node()
        assert len(nodes.items) > 0
        # our own facade, the way a run connects (watch-based waits included)
        cluster = connect(str(sim.kubeconfig_path))
        assert cluster.list("v1", "nodes")


def test_a_client_that_does_not_trust_the_ca_is_refused(tmp_path: Path) -> None:
    with simulated_cluster(PROFILE, kubeconfig=tmp_path / "kubeconfig") as sim:
        ctx = ssl.create_default_context()  # system CAs only
        with pytest.raises(urllib.error.URLError) as info:
            urllib.request.urlopen(f"{sim.url}/version", context=ctx, timeout=10)
        assert isinstance(info.value.reason, ssl.SSLCertVerificationError)
        ca = base64.b64decode(
            _kubeconfig(sim.kubeconfig_path)["clusters"][0]["cluster"]["certificate-authority-data"]
        )  # type: ignore[index]
        trusted = ssl.create_default_context(cadata=ca.decode("ascii"))
        req = urllib.request.Request(f"{sim.url}/version", headers={"Authorization": f"Bearer {sim.token}"})
        with urllib.request.urlopen(req, context=trusted, timeout=10) as resp:
            assert resp.status == 200


def test_watch_over_tls_stays_open_until_its_timeout(tmp_path: Path) -> None:
    """TLS cannot MSG_PEEK: the server must not take an idle TLS watch for a closed one."""
    with simulated_cluster(PROFILE, kubeconfig=tmp_path / "kubeconfig") as sim:
        cluster = connect(str(sim.kubeconfig_path))
        _, version = cluster.list_with_version("v1", "pods", "default")
        start = time.monotonic()
        with cluster.watch("v1", "pods", "default", resource_version=version, timeout_seconds=2) as stream:
            events = list(stream)
        took = time.monotonic() - start
        assert events == []
        assert took >= 1.5, f"the watch ended after {took:.2f}s"


def test_wait_for_a_pod_over_tls(tmp_path: Path) -> None:
    with simulated_cluster(PROFILE, kubeconfig=tmp_path / "kubeconfig") as sim:
        cluster = connect(str(sim.kubeconfig_path))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "tls-probe", "namespace": "default"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
        }
        cluster.create(pod)
        got = wait_for_pod_phase(cluster, "default", "tls-probe", ("Running", "Succeeded"), timeout=60)
        assert got["status"]["phase"] in ("Running", "Succeeded")


def test_simulate_subcommand_prints_an_https_server(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aicr_pytest.cli",
            "simulate",
            "--profile",
            PROFILE,
            "--kubeconfig",
            str(kubeconfig),
            "--for",
            "0.5",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED API server: https://127.0.0.1:" in proc.stdout


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_works_against_simulate(tmp_path: Path) -> None:
    with simulated_cluster(PROFILE, kubeconfig=tmp_path / "kubeconfig") as sim:
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", str(sim.kubeconfig_path), "get", "nodes", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip()
