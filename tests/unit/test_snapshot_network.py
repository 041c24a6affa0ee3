"""``NetworkTopology`` from recorded agent output: sysfs facts, VPD, PCIe proximity, kernel modules.

The samples are written here in the ``network`` section's format (``collect.sh``), shaped like two
real layouts: a DGX-like node with InfiniBand ConnectX-7 PFs behind the GPUs' PCIe switches plus a
dual-port north-south PF on the CPU's root port, and a node without any GPU.
"""

from __future__ import annotations

import pytest

from aicr_pytest.core.snapshot import Snapshot
from aicr_pytest.snapshot.network import (
    NetworkFacts,
    PciFunction,
    kernel_modules,
    network_topology,
    parse_network_section,
    parse_vpd,
    proximity,
)
from aicr_pytest.testing.players.snapshot_host import vpd_bytes

VPD = vpd_bytes("NVIDIA ConnectX-7 HHHL Adapter Card, 400GbE / NDR IB", "MCX75310AAS-NEAT", "MT2301X00001")

DGX = f"""gpu 0000:18:00.0
path /sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0
numa 0
pf 0000:1a:00.0
path /sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:1a:00.0
numa 0
device 0x1021
sriov_totalvfs 8
net ibp26s0
rdma mlx5_0
psid MT_0000000838
link_layer InfiniBand
vpd {VPD.hex()}
gpu 0000:2a:00.0
path /sys/devices/pci0000:27/0000:27:01.0/0000:28:00.0/0000:29:00.0/0000:2a:00.0
numa 1
pf 0000:2c:00.0
path /sys/devices/pci0000:27/0000:27:01.0/0000:28:00.0/0000:29:01.0/0000:2b:00.0/0000:2c:00.0
numa 1
device 0x1021
sriov_totalvfs 8
net ibp44s0
rdma mlx5_1
psid MT_0000000838
link_layer InfiniBand
pf 0000:aa:00.0
path /sys/devices/pci0000:a8/0000:a8:02.0/0000:aa:00.0
numa 0
device 0xa2dc
sriov_totalvfs 0
net enp170s0f0np0
rdma mlx5_2
psid MT_0000000884
link_layer Ethernet
pf 0000:aa:00.1
path /sys/devices/pci0000:a8/0000:a8:02.0/0000:aa:00.1
numa -1
device 0xa2dc
sriov_totalvfs 0
net enp170s0f1np1
rdma mlx5_3
psid MT_0000000884
link_layer Ethernet
product DGXH100
"""

MODULES = (
    "nvme_rdma 53248 0 - Live 0x0000000000000000\n"
    "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n"
    "gdrdrv 24576 0 - Live 0x0000000000000000 (OE)\n"
    "mlx5_ib 487424 0 - Live 0x0000000000000000\n"
    "rpcrdma 327680 0 - Live 0x0000000000000000\n"
    "ib_uverbs 200704 2 mlx5_ib,nvidia_peermem, Live 0x0000000000000000\n"
    "ib_core 462848 5 nvme_rdma,rpcrdma,mlx5_ib,ib_uverbs,nvidia_peermem, Live 0x0000000000000000\n"
    "nvidia 104071168 110 nvidia_peermem, Live 0x0000000000000000 (OE)\n"
)
LABELS = {"kubernetes.io/hostname": "dgx-01", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def snapshot_of(subtypes: list[dict[str, object]]) -> Snapshot:
    return Snapshot.model_validate({"measurements": [{"type": "NetworkTopology", "subtypes": subtypes}]})


def test_a_dgx_like_node_gives_every_subtype_in_aicrs_shape() -> None:
    subtypes = network_topology(parse_network_section(DGX), MODULES, node_labels=LABELS)
    assert [s["subtype"] for s in subtypes] == ["identity", "capabilities", "pfs", "kernel-modules"]
    identity, caps, pfs, modules = subtypes
    assert identity == {
        "subtype": "identity",
        "data": {"pf-count": 4, "rail-count": 2},
        "context": {
            "identifier": "dgxh100",
            "machineType": "DGXH100",
            "gpuType": "NVIDIA-H100-80GB-HBM3",
            "linkType": "",  # InfiniBand and Ethernet ports: no single link type
            "nodeSelector": "kubernetes.io/hostname=dgx-01",
        },
    }
    assert caps["data"] == {"ib": True, "rdma": True, "sriov": True}
    first, second, ns0, ns1 = pfs["items"]
    assert first == {
        "context": {
            "pciAddress": "0000:1a:00.0",
            "deviceID": "1021",
            "psid": "MT_0000000838",
            "partNumber": "MCX75310AAS-NEAT",
            "rdmaDevice": "mlx5_0",
            "networkInterface": "ibp26s0",
            "model": "NVIDIA ConnectX-7 HHHL Adapter Card, 400GbE / NDR IB",
            "connectedGPU": "GPU0",
            "gpuProximity": "PIX",
        },
        "data": {"numaNode": 0, "rail": 0, "traffic": "east-west"},
    }
    # one more switch level between the PF and its GPU; no VPD read: no part number or model
    assert second["context"]["gpuProximity"] == "PXB" and second["context"]["connectedGPU"] == "GPU1"
    assert "partNumber" not in second["context"] and "model" not in second["context"]
    assert second["data"] == {"numaNode": 1, "rail": 1, "traffic": "east-west"}
    # the CPU-attached PFs: another root complex, so NODE to GPU0 and SYS to GPU1; no traffic or rail
    assert ns0["context"]["gpuProximity"] == "NODE" and ns0["context"]["connectedGPU"] == "GPU0"
    assert ns0["data"] == {"numaNode": 0}
    # numa_node -1 (unknown): no numaNode, and no NODE/SYS class can be told, so no GPU at all
    assert ns1["data"] == {} and "gpuProximity" not in ns1["context"]
    assert modules["data"] == {
        "storage.0": "nvme_rdma",
        "storage.1": "rpcrdma",
        "thirdParty.0": "nvidia_peermem",  # gdrdrv is out of tree but does not use the RDMA core
    }


def test_constraint_paths_on_the_measurement_resolve_as_aicrs_do() -> None:
    snap = snapshot_of(network_topology(parse_network_section(DGX), MODULES, node_labels=LABELS))
    assert snap.lookup("NetworkTopology.identity.pf-count") == "4"
    assert snap.lookup("NetworkTopology.capabilities.ib") == "true"
    assert snap.lookup("NetworkTopology.pfs[0].rail") == "0"
    assert snap.lookup("NetworkTopology.pfs[rail=1].pciAddress") == "0000:2c:00.0"
    assert snap.lookup("NetworkTopology.pfs[rdmaDevice=mlx5_2].networkInterface") == "enp170s0f0np0"
    assert snap.lookup("NetworkTopology.kernel-modules.thirdParty.0") == "nvidia_peermem"


def test_no_nvidia_pf_means_no_measurement() -> None:
    only_gpu = "gpu 0000:18:00.0\npath /sys/devices/pci0000:00/0000:18:00.0\nproduct p5.48xlarge\n"
    assert network_topology(parse_network_section(only_gpu), MODULES) == []
    assert network_topology(parse_network_section(""), MODULES) == []


def test_without_gpus_or_readable_facts_nothing_is_guessed() -> None:
    text = "pf 0000:03:00.0\nnumaNode x\ndevice 0x1021\nnet ens3\n"
    subtypes = network_topology(parse_network_section(text), None)
    identity, caps, pfs = subtypes  # no modules text: no kernel-modules subtype
    assert identity["data"] == {"pf-count": 1}  # no east-west PF: no rail-count
    assert identity["context"] == {"linkType": ""}  # no DMI product, no node labels
    assert caps["data"] == {"rdma": False}  # sriov_totalvfs unreadable, no RDMA port: neither sriov nor ib
    assert pfs["items"] == [
        {
            "context": {"pciAddress": "0000:03:00.0", "deviceID": "1021", "networkInterface": "ens3"},
            "data": {},
        }
    ]


def test_two_gpus_equally_near_leave_connected_gpu_out() -> None:
    def dev(kind: str, address: str, port: str) -> PciFunction:
        path = f"/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:{port}/{address}"
        return PciFunction(kind, address, path=path)

    facts = NetworkFacts(
        pfs=[dev("pf", "0000:1a:00.0", "02.0")],
        gpus=[dev("gpu", "0000:18:00.0", "00.0"), dev("gpu", "0000:19:00.0", "01.0")],
    )
    (item,) = network_topology(facts, None)[2]["items"]
    assert item["context"] == {"pciAddress": "0000:1a:00.0", "gpuProximity": "PIX"}
    assert item["data"] == {"rail": 0, "traffic": "east-west"}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.1",
            "PIX",
        ),
        (
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
            "/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0",
            "PHB",
        ),
        (
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
            "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0",
            "SYS",
        ),
        ("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", "", None),
        ("/sys/devices/platform/x", "/sys/devices/pci0000:00/0000:00:02.0", None),
    ],
)
def test_proximity_classes(a: str, b: str, expected: str | None) -> None:
    assert (
        proximity(PciFunction("pf", "a", path=a, numa=0), PciFunction("gpu", "b", path=b, numa=1)) == expected
    )


def test_vpd_fields_are_read_only_when_complete() -> None:
    assert parse_vpd(VPD) == {
        "model": "NVIDIA ConnectX-7 HHHL Adapter Card, 400GbE / NDR IB",
        "partNumber": "MCX75310AAS-NEAT",
    }
    cut = VPD[: VPD.index(b"MCX75310") + 4]  # a read that ended inside the part number
    assert parse_vpd(cut) == {"model": "NVIDIA ConnectX-7 HHHL Adapter Card, 400GbE / NDR IB"}
    assert parse_vpd(VPD[:10]) == {}  # inside the identifier string
    assert parse_vpd(b"\x82\x03\x00\xff\xfe\x00") == {}  # not ASCII
    assert parse_vpd(b"\x00\x01\x02") == {}  # not a VPD resource at all
    # a bad hex line in the section is no VPD
    assert parse_network_section("pf 0000:03:00.0\nvpd 82zz\n").pfs[0].vpd is None


def test_kernel_modules_without_rdma_core() -> None:
    assert kernel_modules("nvidia 1 0 - Live 0x0 (OE)\noverlay 2 1 - Live 0x0\n") == {}
    assert kernel_modules("garbage\n") == {}
