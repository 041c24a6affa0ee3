"""The RDMA fabric readiness gate's pure half: the resource a NicClusterPolicy advertises, and one sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.deployment import rdma_fabric as rf

AKS_POLICY = (
    Path(__file__).resolve().parents[2].parent
    / "shared/reference/aicr/recipes/components/network-operator/manifests/nic-cluster-policy-aks.yaml"
)


def test_upstreams_aks_policy_advertises_the_shared_hca_resource() -> None:
    if not AKS_POLICY.is_file():
        pytest.skip("the upstream reference tree is not next to this worktree")
    assert rf.policy_resources(AKS_POLICY.read_text()) == ["rdma/hca_shared_devices_a"]


@pytest.mark.parametrize(
    ("spec", "resources"),
    [
        ('rdmaSharedDevicePlugin: {config: \'{"configList": [{"resourceName": "x"}]}\'}', ["rdma/x"]),
        (
            'rdmaSharedDevicePlugin: {config: \'{"configList": [{"resourcePrefix": "nvidia.com", '
            '"resourceName": "mlnxnics"}]}\'}',
            ["nvidia.com/mlnxnics"],
        ),
        (
            'sriovDevicePlugin: {config: \'{"resourceList": [{"resourceName": "sriov"}]}\'}',
            ["intel.com/sriov"],
        ),
        ("ofedDriver: {image: doca-driver}", []),
    ],
)
def test_the_device_plugin_configs_name_the_resource(spec: str, resources: list[str]) -> None:
    manifest = (
        "---\nkind: ConfigMap\n---\n{{- if .Values.on }}\nkind: NicClusterPolicy\n"
        f"spec:\n  {spec}\n{{{{- end }}}}\n"
    )
    assert rf.policy_resources(manifest) == resources


@pytest.mark.parametrize(
    "manifest",
    [
        "kind: NicClusterPolicy\nspec:\n  rdmaSharedDevicePlugin: {config: 'not json'}\n",
        "kind: NicClusterPolicy\nspec: [unclosed\n",
    ],
)
def test_a_malformed_policy_is_an_error_not_no_fabric(manifest: str) -> None:
    with pytest.raises(ValueError):
        rf.policy_resources(manifest)


def node(name: str, count: str | None, *, cordoned: bool = False, mellanox: bool = True) -> dict[str, Any]:
    allocatable = {"nvidia.com/gpu": "8"}
    if count is not None:
        allocatable["rdma/a"] = count
    labels = {rf.MELLANOX_LABEL: "true"} if mellanox else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"allocatable": allocatable},
    }


def test_a_uniform_fabric_is_ready_and_discloses_cordoned_nodes() -> None:
    nodes = [
        node("b", "1k"),
        node("a", "1000"),
        node("c", None, cordoned=True),
        node("d", None, mellanox=False),
    ]
    cause, lines = rf.fabric_verdict(nodes, "rdma/a", 60)
    assert cause is None
    assert lines == (
        "Found 3 Mellanox RDMA-capable GPU node(s), 2 schedulable, 1 cordoned:",
        "  c: skipped (cordoned)",
        "nodesValidated: 2/3 (1 cordoned, skipped)",
        "  RDMA fabric (rdma/a): allocatable (uniform) on all 2 schedulable RDMA GPU node(s) (stable ≥1m0s)",
    )


@pytest.mark.parametrize(
    ("nodes", "cause"),
    [
        ([], rf.MSG_NO_COHORT),
        ([node("a", "0"), node("b", "4")], "rdma/a not yet allocatable on 1 of 2 RDMA GPU node(s): [a] "),
        (
            [node("a", "4"), node("b", "2")],
            "rdma/a allocatable count is non-uniform across 2 RDMA GPU node(s) ",
        ),
    ],
)
def test_an_unready_fabric_is_not_ready(nodes: list[dict[str, Any]], cause: str) -> None:
    got, lines = rf.fabric_verdict(nodes, "rdma/a", 60)
    assert got is not None and got.startswith(cause) and lines == ()


def test_several_nodes_are_listed_as_upstreams_format_names_does() -> None:
    """Upstream's ``formatNames`` joins with ``", "`` (``[a, b]``), not Go's ``%v`` (``[a b]``)."""
    got, _ = rf.fabric_verdict([node("a", "0"), node("b", None), node("c", "4")], "rdma/a", 60)
    assert got == (
        "rdma/a not yet allocatable on 2 of 3 RDMA GPU node(s): [a, b] "
        "(network operator MOFED / RDMA device plugin still rolling out)"
    )
    got, _ = rf.fabric_verdict([node("a", "4"), node("b", "2"), node("c", "1")], "rdma/a", 60)
    assert got == (
        "rdma/a allocatable count is non-uniform across 3 RDMA GPU node(s) (want all == 4): [b=2, c=1]"
    )
