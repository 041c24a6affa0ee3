"""gke-gpu-nic-topology's pure parts: the north-interfaces parser (fail closed), the join of each GPU
NIC's nic-info birth IP to its Network, and the GPU NIC Network names; upstream's messages (AICR main,
``validators/internal/gkenet``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aicr_pytest.deployment import gke_nic_topology as topo
from aicr_pytest.deployment.common import CheckFailed
from aicr_pytest.testing.profiles import gke

GPU_NETS = [f"gpu-nic{i}" for i in range(8)]


def test_the_profiles_healthy_annotations_join_every_gpu_nic_to_a_gpu_network() -> None:
    nics = topo.parse_nic_info(gke.nic_info())
    assert nics.ips["eth1"] == "192.168.1.2" and nics.ips["eth0"] == "10.0.0.2"
    by_ip = topo.parse_north_interfaces(gke.north_interfaces())
    assert by_ip["192.168.8.2"] == "gpu-nic7"
    assert topo.displaced_gpu_nic_interfaces(nics, by_ip, GPU_NETS) == []


def test_a_gpu_nic_on_another_network_or_absent_from_the_join_is_displaced() -> None:
    nics = topo.parse_nic_info(gke.nic_info())
    by_ip = topo.parse_north_interfaces(gke.north_interfaces(gvnic_displaced=True))
    assert topo.displaced_gpu_nic_interfaces(nics, by_ip, GPU_NETS) == [
        'eth8(ip 192.168.8.2 -> network "gvnic-1")'
    ]
    del by_ip["192.168.1.2"]
    assert topo.displaced_gpu_nic_interfaces(nics, by_ip, GPU_NETS)[0] == 'eth1(ip 192.168.1.2 -> network "")'


def test_a_missing_interface_or_one_without_an_ip_is_not_judged_by_the_join() -> None:
    entries = [{"birthName": "eth1", "birthIP": "", "pciAddress": "0000:06:00.0"}]
    nics = topo.parse_nic_info(json.dumps(entries))
    assert topo.displaced_gpu_nic_interfaces(nics, {}, GPU_NETS) == []


@pytest.mark.parametrize(
    ("value", "cause"),
    [
        ("", "node has no networking.gke.io/north-interfaces annotation"),
        ("  ", "node has no networking.gke.io/north-interfaces annotation"),
        ("{bad json", "cannot parse networking.gke.io/north-interfaces annotation: Expecting"),
        ('{"network": "x"}', "cannot parse networking.gke.io/north-interfaces annotation: not a JSON list"),
        ("[1]", "cannot parse networking.gke.io/north-interfaces annotation: entry 0 is not an object"),
        (
            '[{"network": 3, "ipAddress": "10.0.0.1"}]',
            "cannot parse networking.gke.io/north-interfaces annotation: entry 0 has a non-string field",
        ),
    ],
)
def test_an_unparsable_north_interfaces_fails_closed(value: str, cause: str) -> None:
    with pytest.raises(ValueError) as err:
        topo.parse_north_interfaces(value)
    assert str(err.value).startswith(cause)


def test_north_interfaces_skips_partial_entries_and_null_is_empty() -> None:
    value = (
        '[{"network": "gpu-nic0"}, {"ipAddress": "10.0.0.1"}, null, {"network": "n", "ipAddress": "1.2.3.4"}]'
    )
    assert topo.parse_north_interfaces(value) == {"1.2.3.4": "n"}
    assert topo.parse_north_interfaces("null") == {}


def test_gpu_nic_networks_are_the_names_containing_gpu_nic() -> None:
    nets = [{"metadata": {"name": n}} for n in ("default", "gpu-nic1", "a3-gpu-nic-0", "gvnic-1")]
    assert topo.gpu_nic_network_names(nets) == ["a3-gpu-nic-0", "gpu-nic1"]


def _node(name: str, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations}}


def test_the_verdict_names_every_displaced_node_and_counts_the_unverified() -> None:
    lines: list[str] = []
    healthy = gke.a3_node_annotations()
    nodes = [_node("a", **healthy), _node("b", **{topo.NIC_INFO_ANNOTATION: gke.nic_info()})]
    line = topo.evaluate_nic_topology(nodes, GPU_NETS, emit=lines.append)
    assert line.endswith(
        "; 0 node(s) have no nic-info annotation (unverified); 1 node(s) displacement unverified "
        "(no north-interfaces annotation, or no GPU NIC Networks discovered to join against)"
    )
    assert lines[0] == "nodesValidated: 2/2"
    displaced = {**healthy, topo.NORTH_INTERFACES_ANNOTATION: gke.north_interfaces(gvnic_displaced=True)}
    with pytest.raises(CheckFailed) as failed:
        topo.evaluate_nic_topology([_node("c", **displaced)], GPU_NETS, emit=lines.append)
    assert str(failed.value).startswith(
        '[CONFLICT] recipe declares gke-nccl-tcpxo but node "c" has GPU NIC interface(s) mapped to a non-GPU '
        'network (gVNIC displacement): eth8(ip 192.168.8.2 -> network "gvnic-1") — GPUDirect TCPXO'
    )
    # no GPU NIC Network to join against: unverified, not a pass of the join and not a failure
    line = topo.evaluate_nic_topology([_node("c", **displaced)], [], emit=lines.append)
    assert "1 node(s) displacement unverified" in line


@pytest.mark.parametrize(
    ("extra", "cause"),
    [
        (1, "cannot parse networking.gke.io/nic-info annotation: entry 9 is not an object"),
        ("gve1", "cannot parse networking.gke.io/nic-info annotation: entry 9 is not an object"),
        (
            {"birthName": "gve1", "pciAddress": 7},
            "cannot parse networking.gke.io/nic-info annotation: entry 9 has a non-string field",
        ),
        (
            {"birthName": ["eth9"], "pciAddress": "0000:c0:00.0"},
            "cannot parse networking.gke.io/nic-info annotation: entry 9 has a non-string field",
        ),
    ],
)
def test_a_nic_info_entry_go_cannot_decode_fails_closed(extra: object, cause: str) -> None:
    """Upstream decodes nic-info into typed entries: a non-object entry or a non-string field is a
    parse error (the node fails), never an entry skipped or a value stringified into a pass."""
    entries = [*json.loads(gke.nic_info()), extra]
    with pytest.raises(ValueError) as err:
        topo.parse_nic_info(json.dumps(entries))
    assert str(err.value) == cause
    node = _node("a", **{**gke.a3_node_annotations(), topo.NIC_INFO_ANNOTATION: json.dumps(entries)})
    with pytest.raises(CheckFailed) as failed:
        topo.evaluate_nic_topology([node], GPU_NETS, emit=lambda _line: None)
    assert f'node "a" has an unparseable networking.gke.io/nic-info annotation: {cause}' in str(failed.value)


def test_nic_info_null_entries_are_skipped_and_null_is_an_empty_list() -> None:
    entries = [*json.loads(gke.nic_info()), None]
    assert topo.parse_nic_info(json.dumps(entries)).missing == ()
    with pytest.raises(ValueError) as err:
        topo.parse_nic_info("null")
    assert str(err.value) == "networking.gke.io/nic-info annotation is an empty list"
