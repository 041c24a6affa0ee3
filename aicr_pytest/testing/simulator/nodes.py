"""Nodes: resource quantities and :class:`NodeProfile` (a pool of identical, GFD-labelled nodes)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.testing.store import Obj

# ------------------------------------------------------------------------------- quantities --
_SUFFIX = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_QTY_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def parse_quantity(value: Any) -> float:
    """Kubernetes resource quantity (``"500m"``, ``"16Gi"``, ``8``) as a float."""
    if isinstance(value, (int, float)):
        return float(value)
    m = _QTY_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"invalid quantity {value!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2) or ""]


# ------------------------------------------------------------------------------------ nodes --
@dataclass
class NodeProfile:
    """A pool of identical nodes."""

    count: int = 1
    name_prefix: str = "gpu-node"
    instance_type: str = "p5.48xlarge"
    gpu_product: str | None = "NVIDIA-H100-80GB-HBM3"
    gpus_per_node: int = 8
    gpu_memory_mib: int = 81559
    gpu_family: str = "hopper"
    cpu: str = "192"
    memory: str = "2097152Mi"
    pods: str = "110"
    ephemeral_storage: str = "3750Gi"
    extra_resources: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    zone: str = "us-east-1a"
    region: str = "us-east-1"
    kubelet_version: str = "v1.34.1-eks-1234567"
    os_image: str = "Ubuntu 24.04.2 LTS"
    kernel_version: str = "6.8.0-1021-aws"
    container_runtime: str = "containerd://1.7.27"
    driver_version: str = "580.95.05"
    ready: bool = True
    unschedulable: bool = False
    #: the GPU Operator's device plugin runs here: ``nvidia.com/gpu`` is allocatable (``False``: DRA only)
    device_plugin: bool = True
    #: ``aws`` (``aws:///<zone>/i-…``) or ``gce`` (``gce://<project>/<zone>/<name>``): ``spec.providerID``
    provider: str = "aws"
    gce_project: str = "aicr-sim"

    def node_name(self, index: int) -> str:
        return f"{self.name_prefix}-{index}"

    def build(self, index: int) -> Obj:
        name = self.node_name(index)
        labels: dict[str, str] = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": self.instance_type,
            "beta.kubernetes.io/instance-type": self.instance_type,
            "topology.kubernetes.io/zone": self.zone,
            "topology.kubernetes.io/region": self.region,
        }
        resources: dict[str, str] = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": self.pods,
            "ephemeral-storage": self.ephemeral_storage,
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }
        if self.gpu_product and self.gpus_per_node:
            major = self.driver_version.split(".")[0]
            labels.update(
                {
                    "nvidia.com/gpu.present": "true",
                    "nvidia.com/gpu.product": self.gpu_product,
                    "nvidia.com/gpu.count": str(self.gpus_per_node),
                    "nvidia.com/gpu.memory": str(self.gpu_memory_mib),
                    "nvidia.com/gpu.family": self.gpu_family,
                    "nvidia.com/gpu.machine": self.instance_type,
                    "nvidia.com/gpu.deploy.device-plugin": "true" if self.device_plugin else "false",
                    "nvidia.com/gpu.deploy.driver": "true",
                    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
                    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
                    "nvidia.com/gpu.deploy.container-toolkit": "true",
                    "nvidia.com/cuda.driver.major": major,
                    "nvidia.com/cuda.driver-version.full": self.driver_version,
                    "nvidia.com/mig.capable": "true",
                    "nvidia.com/mig.strategy": "single",
                    "feature.node.kubernetes.io/pci-10de.present": "true",
                }
            )
            if self.device_plugin:
                resources["nvidia.com/gpu"] = str(self.gpus_per_node)
        labels.update(self.labels)
        resources.update(self.extra_resources)
        taints = [dict(t) for t in self.taints]
        if self.provider == "gce":
            spec: Obj = {"providerID": f"gce://{self.gce_project}/{self.zone}/{name}"}
        else:
            spec = {"providerID": f"aws:///{self.zone}/i-{index:017x}"}
        if taints:
            spec["taints"] = taints
        if self.unschedulable:
            spec["unschedulable"] = True
            spec.setdefault("taints", []).append(
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": None}
            )
            spec["taints"][-1].pop("timeAdded")
        ready = "True" if self.ready else "False"
        conds = [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
            {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
            {
                "type": "Ready",
                "status": ready,
                "reason": "KubeletReady" if self.ready else "KubeletNotReady",
                "message": "kubelet is posting ready status" if self.ready else "container runtime is down",
            },
        ]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": dict(self.annotations)},
            "spec": spec,
            "status": {
                "capacity": dict(resources),
                "allocatable": dict(resources),
                "conditions": conds,
                "addresses": [
                    {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250 + 1}"},
                    {"type": "Hostname", "address": name},
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    "bootID": f"boot-{name}",
                    "containerRuntimeVersion": self.container_runtime,
                    "kernelVersion": self.kernel_version,
                    "kubeProxyVersion": self.kubelet_version,
                    "kubeletVersion": self.kubelet_version,
                    "machineID": f"machine-{name}",
                    "operatingSystem": "linux",
                    "osImage": self.os_image,
                    "systemUUID": f"uuid-{name}",
                },
            },
        }
