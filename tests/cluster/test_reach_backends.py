"""A broken API server gets a verdict in seconds, on both backends.

Each scenario puts the backend's API server (the fake, or the real control plane) behind
:class:`~tests.harness.brokenapi.BrokenApi`, a loopback TCP proxy that refuses, stalls or answers
every request with one status, and connects the facade with a short reach bound.  401 and a
certificate from another CA come from the real servers themselves (a wrong token, a wrong CA).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from aicr_pytest.kube import connect, reach
from aicr_pytest.kube.errors import ClusterUnreachable
from tests.harness.backends import K8sBackend
from tests.harness.brokenapi import BrokenApi

BOUND = 1.0  # the reach bound these scenarios use (seconds)


def _upstream(backend: K8sBackend) -> str:
    doc = yaml.safe_load(backend.kubeconfig_path.read_text())
    return str(doc["clusters"][0]["cluster"]["server"])


@pytest.mark.parametrize(
    ("mode", "klass"),
    [
        ("refuse", reach.REFUSED),
        ("stall", reach.SILENT),
        (500, reach.SERVER_ERROR),
        (503, reach.SERVER_ERROR),
        (429, reach.THROTTLED),
        (403, reach.FORBIDDEN),
        (401, reach.UNAUTHORIZED),
    ],
)
def test_a_broken_server_is_classified_within_the_bound(
    k8s_backend: K8sBackend, tmp_path: Path, mode: str | int, klass: str
) -> None:
    with BrokenApi(_upstream(k8s_backend), mode=mode) as proxy:
        scheme = "http" if isinstance(mode, int) else _upstream(k8s_backend).split("://")[0]
        kubeconfig = proxy.kubeconfig(k8s_backend.kubeconfig_path, tmp_path / "k", scheme=scheme)
        start = time.monotonic()
        cluster = connect(str(kubeconfig), reach_timeout=BOUND)
        took = time.monotonic() - start
        assert cluster.tripped is not None
        verdict = cluster.tripped.reach
        assert isinstance(verdict, reach.Reach) and verdict.klass == klass
        assert took < BOUND + 2.0
        line = str(cluster.tripped)
        assert line.startswith(f"cannot reach the cluster at {proxy.url(scheme)}")
        assert "\n" not in line
        with pytest.raises(ClusterUnreachable, match="cannot reach the cluster"):
            cluster.list("v1", "namespaces").__next__()


def test_a_refused_credential_from_the_real_server_is_401(k8s_backend: K8sBackend, tmp_path: Path) -> None:
    doc = yaml.safe_load(k8s_backend.kubeconfig_path.read_text())
    doc["users"][0]["user"] = {"token": "expired-token"}
    path = tmp_path / "k"
    path.write_text(yaml.safe_dump(doc))
    cluster = connect(str(path), reach_timeout=BOUND)
    assert cluster.tripped is not None
    assert cluster.tripped.reach.klass == reach.UNAUTHORIZED  # type: ignore[attr-defined]
    assert f"renew user {doc['users'][0]['name']}'s credential" in str(cluster.tripped)


def test_a_certificate_from_another_ca_is_tls(
    k8s_backend: K8sBackend, tmp_path: Path, aicr_fake_cluster_factory: object
) -> None:
    from aicr_pytest.testing.server.tls import make_tls

    if k8s_backend.name == "fake":  # the in-process fake serves plain HTTP unless asked for TLS
        fc = aicr_fake_cluster_factory(tls=True)  # type: ignore[operator]
        doc = yaml.safe_load(Path(fc.kubeconfig_path).read_text())
    else:
        doc = yaml.safe_load(k8s_backend.kubeconfig_path.read_text())
    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_bytes(make_tls().ca_pem)
    cluster_entry = doc["clusters"][0]["cluster"]
    cluster_entry.pop("certificate-authority-data", None)
    cluster_entry["certificate-authority"] = str(other_ca)
    path = tmp_path / "k"
    path.write_text(yaml.safe_dump(doc))
    cluster = connect(str(path), reach_timeout=BOUND)
    assert cluster.tripped is not None
    assert cluster.tripped.reach.klass == reach.TLS  # type: ignore[attr-defined]
    assert f"certificate-authority ({other_ca}) must be the CA that signed" in str(cluster.tripped)


@pytest.mark.parametrize(("gone", "klass"), [("refuse", reach.REFUSED), ("stall", reach.SILENT)])
def test_a_cluster_that_goes_away_mid_run_trips_the_breaker(
    k8s_backend: K8sBackend, tmp_path: Path, gone: str, klass: str
) -> None:
    with BrokenApi(_upstream(k8s_backend), mode="pass") as proxy:
        kubeconfig = proxy.kubeconfig(k8s_backend.kubeconfig_path, tmp_path / "k")
        cluster = connect(str(kubeconfig), reach_timeout=BOUND)
        cluster.request_timeout = (BOUND, 5.0)  # what a stalled request may hold (the run's is 20 s)
        assert cluster.tripped is None
        assert cluster.server_version().get("major")
        proxy.set_mode(gone)
        start = time.monotonic()
        with pytest.raises(ClusterUnreachable) as err:
            cluster.server_version()
        assert err.value.reach.klass == klass  # type: ignore[attr-defined]
        assert time.monotonic() - start < 5.0 + BOUND + 2.0
        start = time.monotonic()
        with pytest.raises(ClusterUnreachable):  # the breaker answers at once from now on
            cluster.get("v1", "Namespace", "default")
        assert time.monotonic() - start < 0.5
