"""``gke-gpu-nic-topology`` (AICR main, AICR #2265 case 1) end to end on the fake cluster: the
``h100-gke-training`` profile's a3-megagpu-8g nodes carry a clean ``networking.gke.io/nic-info``
(eth0 plus eth1..eth8); fault ``gvnic-displaces-gpu-nic`` puts a gVNIC (``gve1``) in eth8's slot on the
last GPU node. Pass, fail naming the node, fail on an unparsable annotation, skip when the recipe does
not declare ``gke-nccl-tcpxo`` or no node could be verified, and fail when no a3 node exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.deployment import gke_nic_topology
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster.check_runner import run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
CHECK = "gke-gpu-nic-topology"
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


def annotate(fc: FakeCluster, node: str, value: str | None) -> None:
    obj = fc.find("v1", "Node", node)
    assert obj is not None
    annotations = obj["metadata"].setdefault("annotations", {})
    if value is None:
        annotations.pop(gke_nic_topology.NIC_INFO_ANNOTATION, None)
    else:
        annotations[gke_nic_topology.NIC_INFO_ANNOTATION] = value
    fc.add(obj)


def gpu_nodes(fc: FakeCluster) -> list[str]:
    return sorted(
        n["metadata"]["name"]
        for n in fc.list(
            "v1", "Node", None, label_selector="cloud.google.com/gke-accelerator=nvidia-h100-mega-80gb"
        )
    )


def test_clean_a3_nodes_pass(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    t = run(pytester, fc, recipe())
    assert t["status"] == "passed", t.get("message")
    assert t["stdout"] == [
        "nodesValidated: 4/4",
        "Verified NIC topology on 4 a3 GPU node(s): all map 8 GPU NIC interfaces (eth1..eth8)",
    ]


def test_a_gvnic_in_a_gpu_nic_slot_fails_naming_the_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training", faults=["gvnic-displaces-gpu-nic"])
    last = gpu_nodes(fc)[-1]
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert t["message"] == (
        f'[CONFLICT] recipe declares gke-nccl-tcpxo but node "{last}" has unexpected interface(s) beyond '
        f'eth0..eth8: gve1 (gVNIC displacement signature); node "{last}" maps 7 of 8 GPU NIC interfaces '
        "(missing: eth8)" + TAIL.format(remedy=gke_nic_topology.REMEDIATION_DISPLACEMENT)
    )


@pytest.mark.parametrize(
    ("value", "cause"),
    [
        ("not json", "cannot parse networking.gke.io/nic-info annotation: "),
        ("[]", "networking.gke.io/nic-info annotation is an empty list"),
        (
            '[{"birthName": "eth1", "pciAddress": "a"}, {"birthName": "eth1", "pciAddress": "b"}]',
            'networking.gke.io/nic-info annotation has a duplicate interface name "eth1"',
        ),
    ],
)
def test_an_unparsable_annotation_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, value: str, cause: str
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    node = gpu_nodes(fc)[0]
    annotate(fc, node, value)
    t = run(pytester, fc, recipe())
    assert t["status"] == "failed"
    assert f'node "{node}" has an unparseable networking.gke.io/nic-info annotation: {cause}' in t["message"]


def test_nodes_without_the_annotation_are_unverified(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
    nodes = gpu_nodes(fc)
    annotate(fc, nodes[0], None)
    t = run(pytester, fc, recipe())
    assert t["status"] == "passed", t.get("message")
    assert t["stdout"][-1] == (
        "Verified NIC topology on 3 a3 GPU node(s); 1 node(s) have no nic-info annotation (unverified)"
    )
    for node in nodes[1:]:
        annotate(fc, node, None)
    t = run(pytester, fc, recipe())
    assert (t["status"], t["message"]) == (
        "skipped",
        "could not verify NIC topology on any of the 4 a3 GPU node(s) (4 without a nic-info annotation)",
    )


def test_a_recipe_without_tcpxo_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-gke-training")
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
