"""The GKE profile: H100 on a3-megagpu-8g with GPUDirect-TCPXO over 8 GPU NICs."""

from __future__ import annotations

import json

from aicr_pytest.testing.builders import (
    GKE_GPU_NICS,
    TCPXO_INSTALLER,
    crd,
    crd_established,
    daemonset,
    default_storage_class,
    deployment,
    system_node,
)
from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster
from aicr_pytest.testing.profiles.eks import h100_eks_training
from aicr_pytest.testing.simulator import NodeProfile

NIC_INFO_ANNOTATION = "networking.gke.io/nic-info"
NORTH_INTERFACES_ANNOTATION = "networking.gke.io/north-interfaces"
#: the GPU NIC PCI slots of a live a3-megagpu-8g node (eth1..eth8), as AICR records them
A3_GPU_NIC_SLOTS = ("06", "07", "0d", "0e", "86", "87", "8d", "8e")
#: the gVNIC additional network a misprovisioned pool carries (``gvnic-displaces-gpu-nic``)
GVNIC_NETWORK = "gvnic-1"
#: the labels GKE puts on an a3-megagpu-8g GPU node (``gke-gpu-nic-topology`` selects the accelerator)
A3_NODE_LABELS = {
    "cloud.google.com/gke-nodepool": "a3mega-pool",
    "cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb",
    "cloud.google.com/gke-gpu": "true",
}


def nic_info(gvnic_displaced: bool = False) -> str:
    """The node's ``networking.gke.io/nic-info``: eth0 (gVNIC) and the 8 GPU NICs eth1..eth8; with
    ``gvnic_displaced`` an additional gVNIC network (``gve1``) took eth8's PCI slot."""
    entries = [{"birthName": "eth0", "birthIP": "10.0.0.2", "pciAddress": "0000:00:04.0"}]
    for i, slot in enumerate(A3_GPU_NIC_SLOTS, start=1):
        name = "gve1" if gvnic_displaced and i == len(A3_GPU_NIC_SLOTS) else f"eth{i}"
        entries.append({"birthName": name, "birthIP": f"192.168.{i}.2", "pciAddress": f"0000:{slot}:00.0"})
    return json.dumps(entries, separators=(",", ":"))


def north_interfaces(gvnic_displaced: bool = False) -> str:
    """The node's ``networking.gke.io/north-interfaces``: each additional interface's Network and
    underlay IP (the ``nic-info`` birth IP), ``gpu-nic0``..``gpu-nic7``; with ``gvnic_displaced`` the
    last one sits on :data:`GVNIC_NETWORK`."""
    entries = []
    for i in range(1, len(A3_GPU_NIC_SLOTS) + 1):
        last = gvnic_displaced and i == len(A3_GPU_NIC_SLOTS)
        entries.append(
            {"network": GVNIC_NETWORK if last else f"gpu-nic{i - 1}", "ipAddress": f"192.168.{i}.2"}
        )
    return json.dumps(entries, separators=(",", ":"))


def a3_node_annotations(gvnic_displaced: bool = False) -> dict[str, str]:
    """GKE multi-networking's annotations on an a3-megagpu-8g node (``nic-info``, ``north-interfaces``)."""
    return {
        NIC_INFO_ANNOTATION: nic_info(gvnic_displaced),
        NORTH_INTERFACES_ANNOTATION: north_interfaces(gvnic_displaced),
    }


def install_gke_system(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    """GKE's kube-system with multi-NIC GPUDirect-TCPXO networking (a3-megagpu-8g).

    * ``networks.networking.gke.io`` / ``gkenetworkparamsets.networking.gke.io`` (cluster-scoped) with
      the ``default`` Network and ``gpu-nic0``..``gpu-nic<N-1>`` (``options["gpu_nics"]``, default 8),
      each ``Ready`` and ``ParamsReady`` (bound to its GKENetworkParamSet);
    * the TCPXO NCCL plugin installer DaemonSet (:data:`TCPXO_INSTALLER`) on every GPU node but
      ``options["tcpxo_missing"]`` and GKE's NRI ``device-injector`` DaemonSet;
    * ``standard-rwo`` as the default StorageClass.
    """
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    gpu_nodes = profile.gpu_node_names()
    sysnode = system_node(profile)
    deployment(
        fc,
        "kube-system",
        "kube-dns",
        "gke.gcr.io/k8s-dns-kube-dns:1.26.3-gke.1",
        sysnode,
        replicas=2,
        labels={"k8s-app": "kube-dns"},
        container="kubedns",
    )
    daemonset(fc, "kube-system", "kube-proxy", "gke.gcr.io/kube-proxy-amd64:v1.33.5-gke.1162000", nodes)
    daemonset(fc, "kube-system", "anetd", "gke.gcr.io/cilium/cilium:v1.15.16-gke.9", nodes)
    missing = set(comp.options.get("tcpxo_missing", ()))
    daemonset(
        fc,
        "kube-system",
        TCPXO_INSTALLER,
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.8-1",
        [n for n in gpu_nodes if n not in missing],
        labels={"k8s-app": TCPXO_INSTALLER},
        container="nccl-tcpxo-installer",
    )
    daemonset(
        fc,
        "kube-system",
        "device-injector",
        "us-docker.pkg.dev/gke-release/gke-release/nri-device-injector:v1.0.0-gke.1",
        gpu_nodes,
        labels={"k8s-app": "device-injector"},
    )
    group = "networking.gke.io"
    crd_established(fc, crd(group, "networks", "Network", ["v1"], namespaced=False))
    crd_established(fc, crd(group, "gkenetworkparamsets", "GKENetworkParamSet", ["v1"], namespaced=False))
    fc.add(
        {
            "apiVersion": f"{group}/v1",
            "kind": "Network",
            "metadata": {"name": "default"},
            "spec": {"type": "L3"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "GNPParamsReady"}]},
        }
    )
    for i in range(int(comp.options.get("gpu_nics", GKE_GPU_NICS))):
        name = f"gpu-nic{i}"
        fc.add(
            {
                "apiVersion": f"{group}/v1",
                "kind": "GKENetworkParamSet",
                "metadata": {"name": name},
                "spec": {
                    "vpc": f"a3mega-net-{i + 1}",
                    "vpcSubnet": f"a3mega-sub-{i + 1}",
                    "deviceMode": "NetDevice",
                },
            }
        )
        fc.add(
            {
                "apiVersion": f"{group}/v1",
                "kind": "Network",
                "metadata": {"name": name},
                "spec": {
                    "type": "Device",
                    "parametersRef": {"group": group, "kind": "GKENetworkParamSet", "name": name},
                },
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "GNPParamsReady"},
                        {"type": "ParamsReady", "status": "True", "reason": "GNPReady"},
                    ]
                },
            }
        )
    default_storage_class(fc, "standard-rwo", "pd.csi.storage.gke.io")
    displaced = set(comp.options.get("gvnic_displaced", ()))
    for name in gpu_nodes:
        node = fc.find("v1", "Node", name)
        if node is not None:
            node["metadata"].setdefault("annotations", {}).update(a3_node_annotations(name in displaced))
            fc.add(node)


def h100_gke_training() -> ClusterProfile:
    """H100 on GKE: 4x a3-megagpu-8g (8x H100 80GB HBM3, GPUDirect-TCPXO over 8 GPU NICs)."""
    gke = {"cloud.google.com/gke-os-distribution": "cos", "cloud.google.com/machine-family": "a3"}
    profile = h100_eks_training()
    profile.name = "h100-gke-training"
    profile.description = (
        "GKE, 4x a3-megagpu-8g (8x H100 80GB HBM3, GPUDirect-TCPXO) + 1 system node, training stack "
        "(Kubeflow Trainer)"
    )
    profile.node_pools = [
        NodeProfile(
            count=1,
            name_prefix="system",
            instance_type="e2-standard-16",
            provider="gce",
            gpu_product=None,
            gpus_per_node=0,
            cpu="16",
            memory="65536Mi",
            ephemeral_storage="100Gi",
            labels={
                **gke,
                "cloud.google.com/machine-family": "e2",
                "cloud.google.com/gke-nodepool": "system",
            },
        ),
        NodeProfile(
            count=4,
            name_prefix="a3mega",
            instance_type="a3-megagpu-8g",
            provider="gce",
            gpu_product="NVIDIA-H100-80GB-HBM3",
            gpus_per_node=8,
            cpu="208",
            memory="1922Gi",
            ephemeral_storage="6000Gi",
            labels={**gke, **A3_NODE_LABELS, "node-role.aicr.run/gpu": "true"},
            taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        ),
    ]
    for pool in profile.node_pools:
        pool.zone, pool.region = "us-central1-a", "us-central1"
        pool.kubelet_version = "v1.33.5-gke.1162000"
        pool.os_image, pool.kernel_version = "Container-Optimized OS from Google", "6.6.97+"
    profile.components[0] = Component("kube-system", install_gke_system)
    profile.version = {"major": "1", "minor": "33", "gitVersion": "v1.33.5-gke.1162000"}
    return profile
