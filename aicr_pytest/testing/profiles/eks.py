"""The EKS profiles: H100 (training, inference), GB200 (training) and GB300 over ConnectX RoCE."""

from __future__ import annotations

from aicr_pytest.testing.builders import ROCE_DEVICE_CLASS, ROCE_DRIVER, add_namespace, daemonset
from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster
from aicr_pytest.testing.players.autoscaling import install_karpenter
from aicr_pytest.testing.players.cre import install_nvcre
from aicr_pytest.testing.players.gateway import install_gateway, install_gateway_api
from aicr_pytest.testing.players.slinky import install_slinky
from aicr_pytest.testing.profiles.components import (
    install_cert_manager,
    install_dra_driver,
    install_dynamo,
    install_gpu_operator,
    install_kai,
    install_kube_system,
    install_kubeflow_trainer,
    install_nfd,
    install_nvsentinel,
)
from aicr_pytest.testing.profiles.monitoring import install_prometheus
from aicr_pytest.testing.simulator import NodeProfile


def _h100_pools() -> list[NodeProfile]:
    return [
        NodeProfile(
            count=1,
            name_prefix="system",
            instance_type="m7i.4xlarge",
            gpu_product=None,
            gpus_per_node=0,
            cpu="16",
            memory="65536Mi",
            ephemeral_storage="200Gi",
            labels={"eks.amazonaws.com/nodegroup": "system", "node-role.aicr.run/system": "true"},
        ),
        NodeProfile(
            count=4,
            name_prefix="h100",
            instance_type="p5.48xlarge",
            gpu_product="NVIDIA-H100-80GB-HBM3",
            gpus_per_node=8,
            extra_resources={"vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "10Gi"},
            labels={"eks.amazonaws.com/nodegroup": "gpu-h100", "node-role.aicr.run/gpu": "true"},
        ),
    ]


def h100_eks_training() -> ClusterProfile:
    return ClusterProfile(
        name="h100-eks-training",
        description="EKS, 4x p5.48xlarge (8x H100 80GB HBM3) + 1 system node, training stack "
        "(Kubeflow Trainer)",
        node_pools=_h100_pools(),
        components=[
            Component("kube-system", install_kube_system),
            Component("cert-manager", install_cert_manager),
            Component("nfd", install_nfd),
            Component("kube-prometheus-stack", install_prometheus),
            Component("gpu-operator", install_gpu_operator),
            Component("kai-scheduler", install_kai),
            Component("kubeflow-trainer", install_kubeflow_trainer),
            Component("nvidia-dra-driver-gpu", install_dra_driver),
            Component("nvsentinel", install_nvsentinel),
        ],
        version={"major": "1", "minor": "34", "gitVersion": "v1.34.1-eks-1a2b3c4"},
    )


def h100_eks_inference() -> ClusterProfile:
    profile = h100_eks_training()
    profile.name = "h100-eks-inference"
    profile.description = "EKS, 4x p5.48xlarge (8x H100 80GB HBM3) + 1 system node, inference stack (Dynamo)"
    profile.components.append(Component("dynamo-platform", install_dynamo))
    dra = profile.component("nvidia-dra-driver-gpu")
    if dra is not None:  # device-plugin production default: no gpu.nvidia.com slices (#1327)
        dra.options["gpus"] = False
    return profile


def h100_eks_training_karpenter() -> ClusterProfile:
    """The training profile with Karpenter and a GPU NodePool (cluster-autoscaling's behavioural path)."""
    profile = h100_eks_training()
    profile.name = "h100-eks-training-karpenter"
    profile.description += ", Karpenter with a GPU NodePool"
    profile.components.append(Component("karpenter", install_karpenter))
    return profile


def h100_eks_inference_gateway() -> ClusterProfile:
    """The inference profile with the agentgateway inference gateway behind a LoadBalancer scoped to
    ``10.0.0.0/8`` (the ``gateway-open`` fault drops the source ranges)."""
    profile = h100_eks_inference()
    profile.name = "h100-eks-inference-gateway"
    profile.description += ", agentgateway inference gateway (LoadBalancer scoped to 10.0.0.0/8)"
    profile.components.append(Component("agentgateway-crds", install_gateway_api))
    profile.components.append(
        Component("agentgateway", install_gateway, {"load_balancer": True, "source_ranges": ["10.0.0.0/8"]})
    )
    return profile


def h100_eks_training_dra() -> ClusterProfile:
    """The H100 training stack with whole GPUs from DRA only (policy ``dra-resource-claim``): the GPU
    Operator's device plugin is off (nodes advertise no ``nvidia.com/gpu``), the NVIDIA DRA driver
    publishes ``gpu.nvidia.com`` devices (``DeviceClass gpu.nvidia.com``, one ResourceSlice per node)."""
    profile = h100_eks_training()
    profile.name = "h100-eks-training-dra"
    profile.description = (
        "EKS, 4x p5.48xlarge (8x H100 80GB HBM3) + 1 system node, training stack, whole GPUs via DRA "
        "(gpu.nvidia.com ResourceClaims; no device plugin)"
    )
    for pool in profile.gpu_pools():
        pool.device_plugin = False
    operator = profile.component("gpu-operator")
    if operator is not None:
        operator.options["device_plugin"] = False
    return profile


def gb200_eks_training() -> ClusterProfile:
    """GB200 on EKS: 4x p6e-gb200.36xlarge (4 GPUs each, one NVL72 IMEX clique) for -net/-nvls."""
    arm = {"kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "arm64"}
    profile = h100_eks_training()
    profile.name = "gb200-eks-training"
    profile.description = (
        "EKS, 4x p6e-gb200.36xlarge (4x GB200) + 1 system node, training stack (Kubeflow Trainer)"
    )
    profile.node_pools = [
        NodeProfile(
            count=1,
            name_prefix="system",
            instance_type="m7g.4xlarge",
            gpu_product=None,
            gpus_per_node=0,
            cpu="16",
            memory="65536Mi",
            ephemeral_storage="200Gi",
            labels={"eks.amazonaws.com/nodegroup": "system", "node-role.aicr.run/system": "true", **arm},
        ),
        NodeProfile(
            count=4,
            name_prefix="gb200",
            instance_type="p6e-gb200.36xlarge",
            gpu_product="NVIDIA-GB200",
            gpus_per_node=4,
            gpu_memory_mib=189471,
            gpu_family="blackwell",
            cpu="144",
            memory="983040Mi",
            kernel_version="6.8.0-1024-aws",
            extra_resources={"vpc.amazonaws.com/efa": "8", "hugepages-2Mi": "10Gi"},
            labels={
                "eks.amazonaws.com/nodegroup": "gpu-gb200",
                "node-role.aicr.run/gpu": "true",
                "nvidia.com/gpu.clique": "5f1c7a52-3c4e-4b8e-9a51-6d1f3e0b2a77.1",
                **arm,
            },
        ),
    ]
    return profile


def gb200_eks_training_slurm() -> ClusterProfile:
    """GB200 training with Slinky Slurm (NodeSet on the GPU nodes, a login pod, IMEX ComputeDomain)."""
    profile = gb200_eks_training()
    profile.name = "gb200-eks-training-slurm"
    profile.description += ", Slinky Slurm"
    profile.components.append(Component("slinky-slurm", install_slinky))
    return profile


def h100_eks_training_cre() -> ClusterProfile:
    """H100 training with NVCRE (the Cluster Readiness Engine CRDs, its manager, the Certification
    player): upstream AICR keeps NVCRE opt-in and qualifies its CRE checks on eks × h100."""
    profile = h100_eks_training()
    profile.name = "h100-eks-training-cre"
    profile.description += ", NVCRE"
    profile.components.append(Component("nvcre", install_nvcre))
    return profile


def install_roce_dra_driver(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    """The AWS ConnectX RoCE DRA driver: DeviceClass :data:`ROCE_DEVICE_CLASS` and, per GPU node,
    a ResourceSlice with one ``rocep<N>s0`` device per GPU (``options["devices_per_node"]``)."""
    ns = "aws-roce-dra-driver"
    add_namespace(fc, ns)
    daemonset(
        fc,
        ns,
        "roce-dra-driver-kubelet-plugin",
        "public.ecr.aws/eks/roce-dra-driver:v0.1.0",
        profile.gpu_node_names(),
        labels={"app.kubernetes.io/name": "roce-dra-driver"},
    )
    fc.add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": ROCE_DEVICE_CLASS},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{ROCE_DRIVER}'"}}]},
        }
    )
    for pool in profile.gpu_pools():
        per_node = int(comp.options.get("devices_per_node", pool.gpus_per_node))
        for i in range(pool.count):
            node = pool.node_name(i)
            fc.add(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-{ROCE_DRIVER}"},
                    "spec": {
                        "driver": ROCE_DRIVER,
                        "nodeName": node,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": [
                            {
                                "name": f"rocep{144 + 16 * d}s0",
                                "attributes": {"linkLayer": {"string": "Ethernet"}, "index": {"int": d}},
                            }
                            for d in range(per_node)
                        ],
                    },
                }
            )


def gb300_eks_roce_training() -> ClusterProfile:
    """EKS with ConnectX RoCE instead of EFA: 4x p6e-gb300r nodes (4x GB300 each, one RoCE NIC per
    GPU as ``roce.networking.k8s.aws`` DRA devices, no ``vpc.amazonaws.com/efa``) for
    ``AICR_NCCL_FABRIC=roce`` ``-net``."""
    profile = gb200_eks_training()
    profile.name = "gb300-eks-roce-training"
    profile.description = (
        "EKS, 4x p6e-gb300r (4x GB300, ConnectX RoCE via DRA) + 1 system node, training stack "
        "(Kubeflow Trainer)"
    )
    gpu = profile.node_pools[1]
    gpu.name_prefix = "gb300"
    gpu.instance_type = "p6e-gb300r.36xlarge"  # the p6e-gb300r family; the size is illustrative
    gpu.gpu_product = "NVIDIA-GB300"
    gpu.gpu_memory_mib = 284208
    gpu.extra_resources = {"hugepages-2Mi": "10Gi"}
    gpu.labels = {**gpu.labels, "eks.amazonaws.com/nodegroup": "gpu-gb300"}
    system = profile.component("kube-system")
    if system is not None:
        system.options["efa"] = False
    profile.components.append(Component("roce-dra-driver", install_roce_dra_driver))
    return profile
