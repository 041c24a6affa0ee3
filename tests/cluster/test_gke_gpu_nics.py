"""``gke-gpu-nic-networks`` end to end on the fake cluster: the bundled check through pytester.

The ``h100-gke-training`` profile binds the ``default`` Network and ``gpu-nic0..7`` (each Ready and
bound); its fault ``gke-gpu-nics-incomplete`` leaves 6 of them; the ``h100-eks-training`` profile
does not serve the GKE Network API at all.  Each scenario proves one of upstream's rules: pass with
8, fail with 6, fail when one of the 8 is unready or unbound (but not for an unready leftover beyond
8), fail when a declaring recipe meets a cluster without the API, skip when the recipe does not
declare ``gke-nccl-tcpxo`` (with and without the API), and ``other`` when the list cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.deployment import gke_gpu_nics
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster.check_runner import run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
CHECK = "gke-gpu-nic-networks"
NETWORKS = r"/apis/networking\.gke\.io/v1/networks"
TCPXO_REF = {
    "name": "gke-nccl-tcpxo",
    "namespace": "kube-system",
    "chart": "gke-nccl-tcpxo",
    "type": "Helm",
    "source": "https://charts.example.invalid",
    "version": "1.0.0",
}
NOT_DECLARED = "gke-nccl-tcpxo not declared in recipe — GPUDirect TCPXO networking is inapplicable"
NO_API_SKIP = (
    "gke-nccl-tcpxo not declared in recipe and the cluster has no GKE Network API — "
    "cluster does not use GPUDirect TCPXO"
)
REMEDY = (
    "GPU NIC networks — GPUDirect TCPXO requires Network and GKENetworkParamSet objects bound into "
    'the cluster, each named to contain "gpu-nic". These are provisioned with the cluster, not by '
    "AICR, and multi-networking cannot be enabled after cluster creation. Verify with: kubectl get "
    "network.networking.gke.io (see docs/integrator/gke-tcpxo-networking.md)"
)


def set_conditions(fc: FakeCluster, name: str, *, ready: str, bound: str) -> None:
    def fn(obj: dict[str, Any]) -> None:
        obj["status"]["conditions"] = [
            {"type": "Ready", "status": ready, "reason": "Test"},
            {"type": "ParamsReady", "status": bound, "reason": "Test"},
        ]

    fc.sim.store.mutate(fc.sim.rt("networking.gke.io/v1", "Network"), None, name, fn)


def recipe(*, tcpxo: bool | None = True) -> dict[str, Any]:
    """The example recipe on GKE running only this check; ``tcpxo``: declare ``gke-nccl-tcpxo``
    (``None``: declare it disabled)."""
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["criteria"]["service"] = "gke"
    doc["validation"] = {"deployment": {"checks": [CHECK]}}
    if tcpxo is not False:
        ref = dict(TCPXO_REF)
        if tcpxo is None:
            ref["overrides"] = {"enabled": False}
        doc["componentRefs"].append(ref)
    return doc


def run(pytester: pytest.Pytester, fc: FakeCluster, doc: dict[str, Any]) -> dict[str, Any]:
    phase_run = run_on_fake(pytester, fc, phase="deployment", recipe=doc, snapshot=SNAPSHOT)
    assert phase_run.report, phase_run.result.stdout.str()[-3000:]
    result: dict[str, Any] = phase_run.tests[CHECK]
    return result


def test_eight_gpu_nic_networks_pass(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    t = run(pytester, fc, recipe())
    assert t["status"] == "passed", t.get("message")
    assert t["stdout"][:9] == ["Found 8 GPU NIC network(s) (need 8):"] + [f"  gpu-nic{i}" for i in range(8)]
    assert "  default" not in t["stdout"]  # only names containing gpu-nic count


def test_six_of_eight_fail_with_the_remediation(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training", faults=["gke-gpu-nics-incomplete"])
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert t["message"] == f"[NOT_FOUND] recipe declares gke-nccl-tcpxo but the cluster has 6 of 8 {REMEDY}"
    assert t["stdout"][0] == "Found 6 GPU NIC network(s) (need 8):"


@pytest.mark.parametrize(("ready", "bound", "problem"), [
    ("False", "True", "not Ready"),
    ("True", "False", "GKENetworkParamSet binding not ready (ParamsReady is not True)"),
])  # fmt: skip
def test_an_unready_or_unbound_network_fails_naming_it(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, ready: str, bound: str, problem: str
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    set_conditions(fc, "gpu-nic3", ready=ready, bound=bound)
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert t["message"] == (
        "[UNAVAILABLE] recipe declares gke-nccl-tcpxo but only 7 of 8 GPU NIC networks are Ready and "
        f"bound to their GKENetworkParamSet (need 8): gpu-nic3: {problem}. Verify with: kubectl get "
        "network.networking.gke.io <name> -o jsonpath='{.status.conditions}'"
    )
    assert f"  gpu-nic3 ({problem})" in t["stdout"]


def test_an_unready_leftover_beyond_a_healthy_eight_passes(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    fc.add(
        {
            "apiVersion": "networking.gke.io/v1",
            "kind": "Network",
            "metadata": {"name": "old-pool-gpu-nic-0"},
            "spec": {"type": "Device"},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Deleted"}]},
        }
    )
    t = run(pytester, fc, recipe())
    assert t["status"] == "passed", t.get("message")
    assert t["stdout"][0] == "Found 9 GPU NIC network(s) (need 8):"


def test_declared_without_the_network_api_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert t["message"] == (
        "[NOT_FOUND] recipe declares gke-nccl-tcpxo but the cluster does not serve "
        "networks.networking.gke.io at all, so it was created without --enable-multi-networking " + REMEDY
    )


@pytest.mark.parametrize(("profile", "tcpxo", "reason"), [
    ("h100-gke-training", False, NOT_DECLARED),
    ("h100-gke-training", None, NOT_DECLARED),  # declared but disabled: not deployed, not asked for
    ("h100-eks-training", False, NO_API_SKIP),
])  # fmt: skip
def test_undeclared_tcpxo_skips(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, profile: str, tcpxo: bool | None, reason: str
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory(profile, faults=["gke-gpu-nics-incomplete"])
    t = run(pytester, fc, recipe(tcpxo=tcpxo))
    assert t["status"] == "skipped"
    assert t["message"] == reason


@pytest.mark.parametrize(("tcpxo", "transient", "prefix"), [
    (True, True, "[UNAVAILABLE] transport failure reading"),
    (False, True, "[UNAVAILABLE] transport failure reading"),
    (False, False, "[INTERNAL] failed to read"),
])  # fmt: skip
def test_unreadable_networks_are_other_even_when_undeclared(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, tcpxo: bool, transient: bool, prefix: str
) -> None:
    """A read error is no evidence that TCPXO is inapplicable: never a skip, never a pass."""
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    if transient:
        fc.faults.server_error(path=NETWORKS, times=None, status=503)
    else:
        fc.faults.reject("GET", NETWORKS, status=400, message="bad list", times=None)
    t = run(pytester, fc, recipe(tcpxo=tcpxo))
    assert t["status"] == "other"
    assert t["message"].startswith(f"{prefix} GKE Networks (networks.networking.gke.io): ")


def test_denied_networks_read_names_rbac(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    fc.faults.deny(path=NETWORKS)
    t = run(pytester, fc, recipe())
    assert t["status"] == "other"
    assert t["message"].startswith(
        "[UNAUTHORIZED] not authorized to read GKE Networks (networks.networking.gke.io) — cannot prove "
        "the recipe-declared capability; grant the validator RBAC: "
    )


def test_gpu_nic_names_are_matched_by_substring_and_sorted() -> None:
    nets = [{"metadata": {"name": n}} for n in ("c-gpu-nic-1", "default", "vpc1", "c-gpu-nic-0")]
    assert [n.name for n in gke_gpu_nics.gpu_nic_networks(nets)] == ["c-gpu-nic-0", "c-gpu-nic-1"]
