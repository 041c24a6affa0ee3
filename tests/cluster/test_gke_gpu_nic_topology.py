"""``gke-gpu-nic-topology`` (AICR main, AICR #2265 case 1) end to end: the ``h100-gke-training``
profile's a3-megagpu-8g nodes carry a clean ``networking.gke.io/nic-info`` (eth0 plus eth1..eth8) and
``networking.gke.io/north-interfaces`` (eth1..eth8's IPs on ``gpu-nic0``..``gpu-nic7``); fault
``gvnic-displaces-gpu-nic`` puts a gVNIC (``gve1``) in eth8's slot on the last GPU node. Pass and the
fault on both backends (the control plane dresses kwok's H100 nodes as a3 nodes,
:mod:`tests.harness.controlplane_gke`); on the fake: fail on an unparsable annotation, the
north-interfaces join (an ethN on a non-GPU network fails; no annotation or no GPU NIC Network leaves
the node's displacement unverified), a Network list error is ``other``, skip when the recipe does not
declare ``gke-nccl-tcpxo`` or no node could be verified, and fail when no a3 node exists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.deployment import gke_nic_topology
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster.check_runner import run_on_backend, run_on_fake
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
CHECK = "gke-gpu-nic-topology"
PROFILE = "h100-gke-training"
SELECTOR = "cloud.google.com/gke-accelerator=nvidia-h100-mega-80gb"
NORTH = gke_nic_topology.NORTH_INTERFACES_ANNOTATION
TCPXO_REF = {
    "name": "gke-nccl-tcpxo",
    "namespace": "kube-system",
    "chart": "gke-nccl-tcpxo",
    "type": "Helm",
    "source": "https://charts.example.invalid",
    "version": "1.0.0",
}
TAIL = (
    " — GPUDirect TCPXO needs all 8 GPU NIC PCI slots mapped to eth1..eth8. {remedy} Verify with: kubectl "
    "get node <gpu-node> -o jsonpath='{{.metadata.annotations.networking\\.gke\\.io/nic-info}}' "
    "(see docs/integrator/gke-tcpxo-networking.md)"
)
PARTIAL = (
    "Verified NIC topology on {verified} a3 GPU node(s); {unverified} node(s) have no nic-info annotation "
    "(unverified); {undisplaced} node(s) displacement unverified (no north-interfaces annotation, or no GPU "
    "NIC Networks discovered to join against)"
)


def recipe(*, tcpxo: bool = True) -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["criteria"]["service"] = "gke"
    doc["validation"] = {"deployment": {"checks": [CHECK]}}
    if tcpxo:
        doc["componentRefs"].append(dict(TCPXO_REF))
    return doc


def run(pytester: pytest.Pytester, fc: FakeCluster, doc: dict[str, Any]) -> dict[str, Any]:
    phase_run = run_on_fake(pytester, fc, phase="deployment", recipe=doc, snapshot=SNAPSHOT)
    assert phase_run.report, phase_run.result.stdout.str()[-3000:]
    result: dict[str, Any] = phase_run.tests[CHECK]
    return result


def run_backend(pytester: pytest.Pytester, backend: K8sBackend) -> dict[str, Any]:
    phase_run = run_on_backend(pytester, backend, phase="deployment", recipe=recipe(), snapshot=SNAPSHOT)
    assert backend.controller_errors() == []
    result: dict[str, Any] = phase_run.tests[CHECK]
    return result


def annotate(
    fc: FakeCluster, node: str, value: str | None, key: str = gke_nic_topology.NIC_INFO_ANNOTATION
) -> None:
    obj = fc.find("v1", "Node", node)
    assert obj is not None
    annotations = obj["metadata"].setdefault("annotations", {})
    if value is None:
        annotations.pop(key, None)
    else:
        annotations[key] = value
    fc.add(obj)


def a3_nodes(backend: K8sBackend | FakeCluster) -> list[str]:
    return sorted(n["metadata"]["name"] for n in backend.list("v1", "Node", None, label_selector=SELECTOR))


def test_clean_a3_nodes_pass(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    count = len(a3_nodes(k8s_backend))
    assert count >= 2  # the profile's 4 on the fake, kwok's H100 pool on the control plane
    t = run_backend(pytester, k8s_backend)
    assert t["status"] == "passed", t.get("message")
    assert t["stdout"] == [
        f"nodesValidated: {count}/{count}",
        f"Verified NIC topology on {count} a3 GPU node(s): all map 8 GPU NIC interfaces (eth1..eth8)",
    ]


def test_a_gvnic_in_a_gpu_nic_slot_fails_naming_the_node(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["gvnic-displaces-gpu-nic"])
    last = a3_nodes(k8s_backend)[-1]
    t = run_backend(pytester, k8s_backend)
    assert t["status"] == "failed"
    assert t["message"] == (
        f'[CONFLICT] recipe declares gke-nccl-tcpxo but node "{last}" has unexpected interface(s) beyond '
        f'eth0..eth8: gve1 (gVNIC displacement signature); node "{last}" maps 7 of 8 GPU NIC interfaces '
        "(missing: eth8)" + TAIL.format(remedy=gke_nic_topology.REMEDIATION_DISPLACEMENT)
    )


def _north(fc: FakeCluster, node: str) -> list[dict[str, str]]:
    obj = fc.find("v1", "Node", node)
    assert obj is not None
    entries: list[dict[str, str]] = json.loads(obj["metadata"]["annotations"][NORTH])
    return entries


def test_a_gpu_nic_joined_to_a_non_gpu_network_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """Every name and slot is right (eth0..eth8), but eth1's IP sits on the ``default`` network:
    the uniform misprovisioning only the north-interfaces join sees."""
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE)
    node = a3_nodes(fc)[0]
    north = _north(fc, node)
    north[0]["network"] = "default"
    annotate(fc, node, json.dumps(north), NORTH)
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert t["message"] == (
        f'[CONFLICT] recipe declares gke-nccl-tcpxo but node "{node}" has GPU NIC interface(s) mapped to a '
        'non-GPU network (gVNIC displacement): eth1(ip 192.168.1.2 -> network "default")'
        + TAIL.format(remedy=gke_nic_topology.REMEDIATION_DISPLACEMENT)
    )


def test_an_ip_missing_from_north_interfaces_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE)
    node = a3_nodes(fc)[1]
    annotate(fc, node, json.dumps(_north(fc, node)[1:]), NORTH)
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert (
        f'node "{node}" has GPU NIC interface(s) mapped to a non-GPU network (gVNIC displacement): '
        in (t["message"])
    )
    assert 'eth1(ip 192.168.1.2 -> network "")' in t["message"]


@pytest.mark.parametrize(
    ("key", "value", "cause"),
    [
        (None, "not json", "cannot parse networking.gke.io/nic-info annotation: "),
        (None, " ", "node has no networking.gke.io/nic-info annotation"),
        (None, "[]", "networking.gke.io/nic-info annotation is an empty list"),
        (
            None,
            '[{"birthName": "eth1", "pciAddress": "a"}, {"birthName": "eth1", "pciAddress": "b"}]',
            'networking.gke.io/nic-info annotation has a duplicate interface name "eth1"',
        ),
        (NORTH, "{not json", "cannot parse networking.gke.io/north-interfaces annotation: "),
        (NORTH, '{"network": "gpu-nic0"}', "cannot parse networking.gke.io/north-interfaces annotation: "),
    ],
)
def test_an_unparsable_annotation_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, key: str | None, value: str, cause: str
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE)
    node = a3_nodes(fc)[0]
    annotate(fc, node, value, key or gke_nic_topology.NIC_INFO_ANNOTATION)
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    name = key or gke_nic_topology.NIC_INFO_ANNOTATION
    assert f'node "{node}" has an unparseable {name} annotation: {cause}' in t["message"]


def test_nodes_without_the_annotation_are_unverified(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE)
    nodes = a3_nodes(fc)
    annotate(fc, nodes[0], None)
    annotate(fc, nodes[1], None, NORTH)
    t = run(pytester, fc, recipe())
    assert t["status"] == "passed", t.get("message")
    assert t["stdout"] == ["nodesValidated: 3/4", PARTIAL.format(verified=3, unverified=1, undisplaced=1)]
    for node in nodes[1:]:
        annotate(fc, node, None)
    t = run(pytester, fc, recipe())
    assert (t["status"], t["message"]) == (
        "skipped",
        "could not verify NIC topology on any of the 4 a3 GPU node(s) (4 without a nic-info annotation)",
    )


def test_no_gpu_nic_network_leaves_displacement_unverified(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE)
    for net in fc.list("networking.gke.io/v1", "Network"):
        if "gpu-nic" in net["metadata"]["name"]:
            fc.delete("networking.gke.io/v1", "Network", net["metadata"]["name"])
    t = run(pytester, fc, recipe())
    assert t["status"] == "passed", t.get("message")
    assert t["stdout"][-1] == PARTIAL.format(verified=4, unverified=0, undisplaced=4)


def test_a_network_list_error_is_other(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE)
    fc.faults.deny("GET", r"/apis/networking\.gke\.io/v1/networks$")
    t = run(pytester, fc, recipe())
    assert t["status"] == "other"
    assert t["message"].startswith(
        "[UNAUTHORIZED] not authorized to read GPU NIC networks (networks) — cannot prove the "
        "recipe-declared capability; grant the validator RBAC: "
    ), t["message"]


def test_a_recipe_without_tcpxo_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory(PROFILE)
    t = run(pytester, fc, recipe(tcpxo=False))
    assert (t["status"], t["message"]) == (
        "skipped",
        "gke-nccl-tcpxo not declared in recipe — GPUDirect TCPXO networking is inapplicable",
    )


def test_no_a3_nodes_fails(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert t["message"] == (
        "[NOT_FOUND] recipe declares gke-nccl-tcpxo but the cluster has no a3-megagpu-8g GPU nodes"
        + TAIL.format(remedy=gke_nic_topology.REMEDIATION_NO_NODES)
    )
