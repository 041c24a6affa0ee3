"""Cluster profiles (what a simulated cluster contains) and named faults (how it is broken).

A :class:`ClusterProfile` is data: node pools plus an ordered list of :class:`Component` s, each
an installer function with options. Faults are functions that mutate a profile *before* it is
applied (remove a component, flip an option, cordon a node), so every fault produces the objects a
real cluster in that state would have. Names follow ``aicr-pytest simulate --profile/--fault``.

Profiles:

* ``h100-eks-training`` -- 4x p5.48xlarge-like nodes (8x H100 80GB HBM3 each, GFD labels,
  ``vpc.amazonaws.com/efa: 32``) + 1 system node; healthy GPU Operator (namespace
  ``gpu-operator``, ``ClusterPolicy/cluster-policy`` state ``ready``, driver / toolkit / device
  plugin / GFD / DCGM exporter / validator DaemonSets ready with Running pods), NFD, AWS EFA device
  plugin, NVIDIA DRA driver (namespace ``nvidia-dra-driver``: controller + kubelet plugin,
  ``DeviceClass gpu.nvidia.com``, one ``ResourceSlice`` per GPU node), KAI scheduler (namespace
  ``kai-scheduler``, ``kai-operator``; pods with ``schedulerName: kai-scheduler`` get scheduled),
  Kubeflow Trainer (namespace ``kubeflow``, CRDs ``trainjobs``/``trainingruntimes``/
  ``clustertrainingruntimes`` in ``trainer.kubeflow.org/v1alpha1``, controller Deployment),
  cert-manager and the Prometheus stack (namespace ``monitoring``). Namespaces follow the AICR
  component registry's ``defaultNamespace``.
* ``gb200-eks-training`` -- the training stack on 4x p6e-gb200.36xlarge-like nodes (4x GB200 each,
  arm64, one ``nvidia.com/gpu.clique``, ``vpc.amazonaws.com/efa: 8``) + 1 system node; the NCCL
  player (:mod:`aicr_pytest.testing.players.nccl`) plays Kubeflow Trainer/JobSet, the launcher log
  and the DRA driver's ComputeDomain -> IMEX ResourceClaimTemplate for ``-net``/``-nvls``.
* ``h100-gke-training`` -- the training stack on GKE: 4x a3-megagpu-8g nodes (8x H100 80GB HBM3,
  ``cloud.google.com/gke-accelerator: nvidia-h100-mega-80gb``, ``cloud.google.com/machine-family:
  a3``, GKE's ``nvidia.com/gpu=present:NoSchedule`` taint, COS) + 1 system node, server version
  ``v1.33.5-gke.…``; GKE multi-NIC networking (``networks.networking.gke.io``: ``default`` +
  ``gpu-nic0..7``), the GPUDirect-TCPXO NCCL plugin installer and NRI device injector DaemonSets.
  The NCCL player plays TCPXO (FasTrak) and the TCPXO preflight probe.
* ``gb300-eks-roce-training`` -- the GB200 training profile re-shaped for ConnectX RoCE: 4x
  p6e-gb300r nodes (4x GB300, no ``vpc.amazonaws.com/efa``) and an AWS RoCE DRA driver
  (``DeviceClass roce.networking.k8s.aws``, one ResourceSlice per node with one NIC per GPU), for
  ``AICR_NCCL_FABRIC=roce`` ``-net``.
* ``h100-eks-inference`` -- the same plus Dynamo (namespace ``dynamo-system``,
  ``DynamoGraphDeployment`` CRD ``nvidia.com/v1beta1`` + ``v1alpha1``, operator Deployment); the DRA
  driver runs ComputeDomains only (``resources.gpus.enabled=false``: no ``gpu.nvidia.com`` slices),
  so whole GPUs come from the device plugin alone. The inference player
  (:mod:`aicr_pytest.testing.players.inference`) plays the Dynamo operator, the endpoint and AIPerf.

Faults:

* ``device-plugin-crashloop`` -- one device-plugin pod in ``CrashLoopBackOff`` (restartCount,
  lastState terminated Error), DaemonSet ``numberReady`` below desired, ClusterPolicy ``notReady``;
* ``gpu-operator-missing`` -- no ``gpu-operator`` namespace, CRD or objects; GPU nodes lack the
  GFD labels and the ``nvidia.com/gpu`` resource (nothing advertises them);
* ``no-kai`` -- no KAI scheduler (pods asking for ``kai-scheduler`` stay Pending, no events);
* ``gpu-node-cordoned`` -- the first GPU node is cordoned (``spec.unschedulable`` + the
  ``node.kubernetes.io/unschedulable:NoSchedule`` taint);
* ``nvidia-smi-missing-gpu`` -- the last GPU node still advertises 8 GPUs but nvidia-smi lists 7
  (the nvidia-smi player honours it);
* ``nccl-low-bandwidth``, ``nccl-socket-fallback``, ``nccl-launcher-never-starts`` -- recorded in
  ``FakeCluster.state["faults"]`` (and the ``kube-public/aicr-simulator`` ConfigMap); the NCCL player
  (:mod:`aicr_pytest.testing.players.nccl`) honours them: ~1/4 bus bandwidth, ``Using network
  Socket``, a launcher pod that stays Pending;
* ``nccl-launcher-log-rotated``, ``trainer-webhook-cache-lag``, ``trainer-webhook-never-admits`` --
  recorded too; the NCCL player serves a launcher log whose results table was rotated away (only a
  termination message keeps it), denies the first 3 / every TrainJob create as Trainer's webhook
  does before its cache has the runtime;
* ``tcpxo-plugin-missing`` -- (GKE) the TCPXO NCCL plugin installer is not on the last GPU node;
* ``gke-gpu-nics-incomplete`` -- (GKE) only 6 of the 8 ``gpu-nic`` Networks exist;
* ``roce-driver-missing`` -- (RoCE) no RoCE DRA driver, DeviceClass or ResourceSlices;
* ``dynamo-crd-missing`` -- no Dynamo operator or CRD (inference-perf skips at guard C);
* ``inference-low-throughput`` -- AIPerf reports ~20,000 tokens/sec (inference-perf fails);
* ``inference-endpoint-down`` -- the frontend answers 503 to every request (endpoint timeout).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.players.nccl import (
    GKE_GPU_NICS,
    ROCE_DEVICE_CLASS,
    ROCE_DRIVER,
    TCPXO_INSTALLER,
)
from aicr_pytest.testing.simulator import NodeProfile
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.cluster import FakeCluster

__all__ = [
    "FAULTS",
    "PROFILES",
    "ClusterProfile",
    "Component",
    "apply_fault",
    "crd",
    "resolve_profile",
]

Installer = Callable[["FakeCluster", "ClusterProfile", "Component"], None]

GPU_OPERATOR_VERSION = "v25.10.0"


@dataclass
class Component:
    name: str
    install: Installer
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ClusterProfile:
    name: str
    description: str = ""
    node_pools: list[NodeProfile] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)
    version: dict[str, str] = field(default_factory=dict)
    cordoned: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)

    def remove(self, name: str) -> None:
        self.components = [c for c in self.components if c.name != name]

    def gpu_pools(self) -> list[NodeProfile]:
        return [p for p in self.node_pools if p.gpu_product and p.gpus_per_node]

    def gpu_node_names(self) -> list[str]:
        return [p.node_name(i) for p in self.gpu_pools() for i in range(p.count)]

    def apply(self, fc: FakeCluster) -> None:
        """Create everything in ``fc`` (before or after it starts)."""
        fc.store.version.update(self.version)
        for pool in self.node_pools:
            fc.sim.add_nodes(pool)
        for comp in self.components:
            comp.install(fc, self, comp)
        for node in self.cordoned:
            fc.sim.cordon(node)
        fc.record_faults(self.faults)
        from aicr_pytest.testing.players import install_players

        install_players(fc, self)
        fc.add(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "aicr-simulator",
                    "namespace": "kube-public",
                    "labels": {"app.kubernetes.io/managed-by": "aicr-pytest-simulator"},
                },
                "data": {"simulated": "true", "profile": self.name, "faults": ",".join(self.faults)},
            }
        )


# ------------------------------------------------------------------------------ object helpers --
def crd(
    group: str,
    plural: str,
    kind: str,
    versions: Iterable[str] = ("v1",),
    *,
    namespaced: bool = True,
    status: bool = True,
    short_names: Iterable[str] = (),
) -> Obj:
    """A minimal ``CustomResourceDefinition`` (schema: preserve unknown fields)."""
    vers = list(versions)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "listKind": f"{kind}List",
                **({"shortNames": list(short_names)} if short_names else {}),
            },
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": i == 0,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                    **({"subresources": {"status": {}}} if status else {}),
                }
                for i, v in enumerate(vers)
            ],
        },
    }


def _crd_established(fc: FakeCluster, obj: Obj) -> None:
    fc.add(obj)
    now = fc.clock.timestamp()
    fc.sim.set_status(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        obj["metadata"]["name"],
        {
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "lastTransitionTime": now,
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "lastTransitionTime": now,
                },
            ],
            "acceptedNames": obj["spec"]["names"],
            "storedVersions": [obj["spec"]["versions"][0]["name"]],
        },
    )


def _namespace(fc: FakeCluster, name: str, labels: dict[str, str] | None = None) -> None:
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
    )


def _default_storage_class(fc: FakeCluster, name: str, provisioner: str) -> None:
    """The cluster's default StorageClass (``WaitForFirstConsumer``, as the cloud CSI drivers ship it)."""
    fc.add(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": name,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )


def _running_pod(
    fc: FakeCluster,
    namespace: str,
    name: str,
    owner: Obj,
    labels: dict[str, str],
    image: str,
    node: str,
    *,
    container: str | None = None,
    crashloop: bool = False,
) -> Obj:
    now = fc.clock.timestamp()
    cname = container or labels.get("app", name)
    status: Obj
    if crashloop:
        status = {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "ContainersNotReady",
                    "lastTransitionTime": now,
                    "message": f"containers with unready status: [{cname}]",
                },
                {
                    "type": "ContainersReady",
                    "status": "False",
                    "reason": "ContainersNotReady",
                    "lastTransitionTime": now,
                },
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            ],
            "containerStatuses": [
                {
                    "name": cname,
                    "image": image,
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 7,
                    "state": {
                        "waiting": {
                            "reason": "CrashLoopBackOff",
                            "message": f"back-off 5m0s restarting failed container={cname} "
                            f"pod={name}_{namespace}",
                        }
                    },
                    "lastState": {
                        "terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}
                    },
                }
            ],
        }
    else:
        status = {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {"type": "Ready", "status": "True", "lastTransitionTime": now},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            ],
            "containerStatuses": [
                {
                    "name": cname,
                    "image": image,
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
            ],
        }
    status.update({"startTime": now, "hostIP": "10.0.0.1", "podIP": "192.168.0.10", "qosClass": "Burstable"})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "containers": [
                {"name": cname, "image": image, "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}}}
            ],
            "tolerations": [{"operator": "Exists"}],
        },
        "status": status,
    }
    fc.store.add(pod)
    if crashloop:
        fc.set_pod_log(
            namespace, name, cname, "E0101 failed to initialize NVML: driver not loaded\n", previous=True
        )
    else:
        fc.set_pod_log(namespace, name, cname, f"I0101 {name} started\n")
    return pod


def daemonset(
    fc: FakeCluster,
    namespace: str,
    name: str,
    image: str,
    nodes: list[str],
    *,
    labels: dict[str, str] | None = None,
    crashloop_nodes: Iterable[str] = (),
    container: str | None = None,
) -> Obj:
    """A DaemonSet with one Running pod per node and matching status counters."""
    lab = {"app": name, **(labels or {})}
    ds = fc.add(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(lab)},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": dict(lab)},
                    "spec": {"containers": [{"name": container or name, "image": image}]},
                },
            },
        }
    )
    bad = set(crashloop_nodes)
    for i, node in enumerate(nodes):
        _running_pod(
            fc,
            namespace,
            f"{name}-{_suffix(name, i)}",
            ds,
            dict(lab),
            image,
            node,
            container=container or name,
            crashloop=node in bad,
        )
    ready = len([n for n in nodes if n not in bad])
    fc.sim.set_daemonset_status(namespace, name, desired=len(nodes), ready=ready)
    return ds


def deployment(
    fc: FakeCluster,
    namespace: str,
    name: str,
    image: str,
    node: str,
    *,
    replicas: int = 1,
    labels: dict[str, str] | None = None,
    container: str | None = None,
) -> Obj:
    """A Deployment with ``replicas`` Running pods (on ``node``) and Available status."""
    lab = {"app": name, **(labels or {})}
    dep = fc.add(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(lab)},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": dict(lab)},
                    "spec": {"containers": [{"name": container or name, "image": image}]},
                },
            },
        }
    )
    for i in range(replicas):
        _running_pod(
            fc,
            namespace,
            f"{name}-{_suffix(name, 1000 + i)}",
            dep,
            dict(lab),
            image,
            node,
            container=container or name,
        )
    fc.sim.set_deployment_status(namespace, name, replicas=replicas, ready=replicas)
    return dep


def _suffix(name: str, i: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    n = (sum(map(ord, name)) * 7919 + i * 104729) % (27**5)
    out = ""
    for _ in range(5):
        out += alphabet[n % 27]
        n //= 27
    return out


# ---------------------------------------------------------------------------------- components --
def _system_node(profile: ClusterProfile) -> str:
    for pool in profile.node_pools:
        if not (pool.gpu_product and pool.gpus_per_node):
            return pool.node_name(0)
    return profile.node_pools[0].node_name(0) if profile.node_pools else "system-0"


def install_kube_system(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    sysnode = _system_node(profile)
    deployment(
        fc,
        "kube-system",
        "coredns",
        "registry.k8s.io/coredns/coredns:v1.11.4",
        sysnode,
        replicas=2,
        labels={"k8s-app": "kube-dns"},
    )
    daemonset(
        fc,
        "kube-system",
        "kube-proxy",
        "registry.k8s.io/kube-proxy:v1.34.1",
        nodes,
        labels={"k8s-app": "kube-proxy"},
    )
    daemonset(fc, "kube-system", "aws-node", "amazon-k8s-cni:v1.19.5", nodes, labels={"k8s-app": "aws-node"})
    deployment(
        fc,
        "kube-system",
        "ebs-csi-controller",
        "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.48.0",
        sysnode,
        replicas=2,
        labels={"app": "ebs-csi-controller"},
    )
    if comp.options.get("efa", True):
        daemonset(
            fc,
            "kube-system",
            "aws-efa-k8s-device-plugin-daemonset",
            "aws-efa-k8s-device-plugin:v0.5.6",
            profile.gpu_node_names(),
            labels={"name": "aws-efa-k8s-device-plugin"},
        )
    # AICR-deployed EKS clusters get gp3 as the default class (aws-ebs-csi-driver component).
    _default_storage_class(fc, "gp3", "ebs.csi.aws.com")


def install_nfd(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "node-feature-discovery"
    _namespace(fc, ns)
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    deployment(
        fc,
        ns,
        "node-feature-discovery-master",
        "registry.k8s.io/nfd/node-feature-discovery:v0.17.3",
        _system_node(profile),
        labels={"app.kubernetes.io/name": "node-feature-discovery"},
    )
    daemonset(
        fc,
        ns,
        "node-feature-discovery-worker",
        "registry.k8s.io/nfd/node-feature-discovery:v0.17.3",
        nodes,
        labels={"app.kubernetes.io/name": "node-feature-discovery"},
    )


GPU_OPERATOR_DAEMONSETS = (
    ("nvidia-driver-daemonset", "nvcr.io/nvidia/driver:580.95.05-ubuntu24.04", "nvidia-driver-ctr"),
    (
        "nvidia-container-toolkit-daemonset",
        "nvcr.io/nvidia/k8s/container-toolkit:v1.18.0",
        "nvidia-container-toolkit-ctr",
    ),
    ("nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", "nvidia-device-plugin"),
    ("gpu-feature-discovery", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", "gpu-feature-discovery"),
    (
        "nvidia-dcgm-exporter",
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.1-4.6.0-ubuntu22.04",
        "nvidia-dcgm-exporter",
    ),
    (
        "nvidia-operator-validator",
        "nvcr.io/nvidia/gpu-operator:" + GPU_OPERATOR_VERSION,
        "nvidia-operator-validator",
    ),
)


def install_gpu_operator(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "gpu-operator"
    _namespace(fc, ns)
    version = comp.options.get("version", GPU_OPERATOR_VERSION)
    _crd_established(fc, crd("nvidia.com", "clusterpolicies", "ClusterPolicy", ["v1"], namespaced=False))
    _crd_established(fc, crd("nvidia.com", "nvidiadrivers", "NVIDIADriver", ["v1alpha1"], namespaced=False))
    deployment(
        fc,
        ns,
        "gpu-operator",
        f"nvcr.io/nvidia/gpu-operator:{version}",
        _system_node(profile),
        labels={
            "app.kubernetes.io/name": "gpu-operator",
            "app.kubernetes.io/version": version,
            "app.kubernetes.io/component": "gpu-operator",
        },
    )
    gpu_nodes = profile.gpu_node_names()
    crash = comp.options.get("crashloop", {})
    for name, image, container in GPU_OPERATOR_DAEMONSETS:
        daemonset(
            fc,
            ns,
            name,
            image,
            gpu_nodes,
            labels={"app.kubernetes.io/part-of": "nvidia-gpu"},
            crashloop_nodes=crash.get(name, ()),
            container=container,
        )
    state = "notReady" if any(crash.values()) else "ready"
    fc.add(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy", "labels": {"app.kubernetes.io/version": version}},
            "spec": {
                "operator": {"defaultRuntime": "containerd"},
                "driver": {"enabled": True, "version": "580.95.05"},
                "toolkit": {"enabled": True},
                "devicePlugin": {"enabled": True},
                "dcgmExporter": {"enabled": True},
                "gfd": {"enabled": True},
                "cdi": {"enabled": True},
            },
            "status": {
                "state": state,
                "namespace": ns,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if state == "ready" else "False",
                        "reason": "Reconciled" if state == "ready" else "OperandNotReady",
                        "message": ""
                        if state == "ready"
                        else "ClusterPolicy is not ready, states not ready: [state-device-plugin]",
                        "lastTransitionTime": fc.clock.timestamp(),
                    }
                ],
            },
        }
    )


def install_dra_driver(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "nvidia-dra-driver"
    _namespace(fc, ns)
    image = "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0"
    _crd_established(fc, crd("resource.nvidia.com", "computedomains", "ComputeDomain", ["v1beta1"]))
    deployment(
        fc,
        ns,
        "nvidia-dra-driver-gpu-controller",
        image,
        _system_node(profile),
        labels={"app.kubernetes.io/name": "nvidia-dra-driver-gpu"},
    )
    daemonset(
        fc,
        ns,
        "nvidia-dra-driver-gpu-kubelet-plugin",
        image,
        profile.gpu_node_names(),
        labels={"app.kubernetes.io/name": "nvidia-dra-driver-gpu"},
        container="gpus",
    )
    if not comp.options.get("gpus", True):  # resources.gpus.enabled=false: ComputeDomains only
        return
    fc.add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
        }
    )
    for pool in profile.gpu_pools():
        for i in range(pool.count):
            node = pool.node_name(i)
            fc.add(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-gpu.nvidia.com"},
                    "spec": {
                        "driver": "gpu.nvidia.com",
                        "nodeName": node,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": [
                            {
                                "name": f"gpu-{g}",
                                "attributes": {
                                    "productName": {"string": (pool.gpu_product or "").replace("-", " ")},
                                    "type": {"string": "gpu"},
                                    "index": {"int": g},
                                },
                                "capacity": {"memory": {"value": f"{pool.gpu_memory_mib}Mi"}},
                            }
                            for g in range(pool.gpus_per_node)
                        ],
                    },
                }
            )


def install_kai(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "kai-scheduler"
    _namespace(fc, ns)
    version = "v0.9.3"
    _crd_established(fc, crd("scheduling.run.ai", "queues", "Queue", ["v2"], namespaced=False))
    _crd_established(fc, crd("scheduling.run.ai", "podgroups", "PodGroup", ["v2alpha2"]))
    _crd_established(fc, crd("kai.scheduler", "configs", "Config", ["v1"], namespaced=False))
    sysnode = _system_node(profile)
    for name in (
        "kai-operator",
        "kai-scheduler-default",
        "binder",
        "podgrouper",
        "admission",
        "queuecontroller",
    ):
        deployment(
            fc,
            ns,
            name,
            f"ghcr.io/nvidia/kai-scheduler/{name}:{version}",
            sysnode,
            labels={"app.kubernetes.io/part-of": "kai-scheduler"},
        )
    fc.add(
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "default-parent-queue"},
            "spec": {"resources": {"gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}},
        }
    )
    fc.add(
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "default-queue"},
            "spec": {
                "parentQueue": "default-parent-queue",
                "resources": {"gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}},
            },
        }
    )
    fc.sim.schedulers.add("kai-scheduler")


def install_kubeflow_trainer(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "kubeflow"
    _namespace(fc, ns)
    group = "trainer.kubeflow.org"
    _crd_established(fc, crd(group, "trainjobs", "TrainJob", ["v1alpha1"]))
    _crd_established(fc, crd(group, "trainingruntimes", "TrainingRuntime", ["v1alpha1"]))
    _crd_established(
        fc, crd(group, "clustertrainingruntimes", "ClusterTrainingRuntime", ["v1alpha1"], namespaced=False)
    )
    _crd_established(fc, crd("jobset.x-k8s.io", "jobsets", "JobSet", ["v1alpha2"]))
    deployment(
        fc,
        ns,
        "kubeflow-trainer-controller-manager",
        "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.1.0",
        _system_node(profile),
        labels={"app.kubernetes.io/name": "trainer"},
        container="manager",
    )
    deployment(
        fc,
        ns,
        "jobset-controller-manager",
        "registry.k8s.io/jobset/jobset:v0.10.1",
        _system_node(profile),
        labels={"app.kubernetes.io/name": "jobset"},
        container="manager",
    )
    for runtime in ("torch-distributed", "mpi-distributed"):
        fc.add(
            {
                "apiVersion": f"{group}/v1alpha1",
                "kind": "ClusterTrainingRuntime",
                "metadata": {"name": runtime},
                "spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {}}},
            }
        )


def install_cert_manager(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "cert-manager"
    _namespace(fc, ns)
    for name in ("cert-manager", "cert-manager-cainjector", "cert-manager-webhook"):
        deployment(
            fc,
            ns,
            name,
            f"quay.io/jetstack/{name}:v1.17.2",
            _system_node(profile),
            labels={"app.kubernetes.io/instance": "cert-manager"},
        )


def install_prometheus(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "monitoring"
    _namespace(fc, ns)
    group = "monitoring.coreos.com"
    for plural, kind in (
        ("prometheuses", "Prometheus"),
        ("servicemonitors", "ServiceMonitor"),
        ("podmonitors", "PodMonitor"),
        ("prometheusrules", "PrometheusRule"),
        ("alertmanagers", "Alertmanager"),
    ):
        _crd_established(fc, crd(group, plural, kind, ["v1"]))
    sysnode = _system_node(profile)
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    for name, image in (
        ("kube-prometheus-stack-operator", "quay.io/prometheus-operator/prometheus-operator:v0.83.0"),
        (
            "kube-prometheus-stack-kube-state-metrics",
            "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.16.0",
        ),
        ("kube-prometheus-stack-grafana", "docker.io/grafana/grafana:12.0.2"),
        ("prometheus-adapter", "registry.k8s.io/prometheus-adapter/prometheus-adapter:v0.12.0"),
    ):
        deployment(
            fc, ns, name, image, sysnode, labels={"app.kubernetes.io/instance": "kube-prometheus-stack"}
        )
    daemonset(
        fc,
        ns,
        "kube-prometheus-stack-prometheus-node-exporter",
        "quay.io/prometheus/node-exporter:v1.9.1",
        nodes,
        labels={"app.kubernetes.io/instance": "kube-prometheus-stack"},
    )
    prom = fc.add(
        {
            "apiVersion": f"{group}/v1",
            "kind": "Prometheus",
            "metadata": {"name": "kube-prometheus-stack-prometheus", "namespace": ns},
            "spec": {"replicas": 1, "serviceMonitorSelector": {}},
            "status": {"availableReplicas": 1, "replicas": 1, "updatedReplicas": 1, "paused": False},
        }
    )
    sts = fc.add(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {
                "name": "prometheus-kube-prometheus-stack-prometheus",
                "namespace": ns,
                "labels": {"app.kubernetes.io/name": "prometheus"},
            },
            "spec": {
                "replicas": 1,
                "serviceName": "prometheus-operated",
                "selector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": "prometheus"}},
                    "spec": {
                        "containers": [
                            {"name": "prometheus", "image": "quay.io/prometheus/prometheus:v3.4.2"}
                        ]
                    },
                },
            },
            "status": {
                "replicas": 1,
                "readyReplicas": 1,
                "availableReplicas": 1,
                "currentReplicas": 1,
                "updatedReplicas": 1,
            },
        }
    )
    del prom
    _running_pod(
        fc,
        ns,
        "prometheus-kube-prometheus-stack-prometheus-0",
        sts,
        {"app.kubernetes.io/name": "prometheus"},
        "quay.io/prometheus/prometheus:v3.4.2",
        sysnode,
        container="prometheus",
    )
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-prometheus-stack-prometheus", "namespace": ns},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": "172.20.10.10",
                "ports": [{"name": "http-web", "port": 9090, "targetPort": 9090, "protocol": "TCP"}],
                "selector": {"app.kubernetes.io/name": "prometheus"},
            },
        }
    )


def install_dynamo(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "dynamo-system"
    _namespace(fc, ns)
    _crd_established(
        fc,
        crd(
            "nvidia.com",
            "dynamographdeployments",
            "DynamoGraphDeployment",
            ["v1beta1", "v1alpha1"],
            short_names=["dgd"],
        ),
    )
    _crd_established(
        fc, crd("nvidia.com", "dynamocomponentdeployments", "DynamoComponentDeployment", ["v1alpha1"])
    )
    deployment(
        fc,
        ns,
        "dynamo-platform-dynamo-operator-controller-manager",
        "nvcr.io/nvidia/ai-dynamo/kubernetes-operator:0.6.1",
        _system_node(profile),
        labels={"app.kubernetes.io/name": "dynamo-operator"},
        container="manager",
    )


# ------------------------------------------------------------------------------------ GKE --
def install_gke_system(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    """GKE's kube-system with multi-NIC GPUDirect-TCPXO networking (a3-megagpu-8g).

    * ``networks.networking.gke.io`` / ``gkenetworkparamsets.networking.gke.io`` (cluster-scoped) with
      the ``default`` Network and ``gpu-nic0``..``gpu-nic<N-1>`` (``options["gpu_nics"]``, default 8);
    * the TCPXO NCCL plugin installer DaemonSet (:data:`TCPXO_INSTALLER`) on every GPU node but
      ``options["tcpxo_missing"]`` and GKE's NRI ``device-injector`` DaemonSet;
    * ``standard-rwo`` as the default StorageClass.
    """
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    gpu_nodes = profile.gpu_node_names()
    sysnode = _system_node(profile)
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
    _crd_established(fc, crd(group, "networks", "Network", ["v1"], namespaced=False))
    _crd_established(fc, crd(group, "gkenetworkparamsets", "GKENetworkParamSet", ["v1"], namespaced=False))
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
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "GNPParamsReady"}]},
            }
        )
    _default_storage_class(fc, "standard-rwo", "pd.csi.storage.gke.io")


# ----------------------------------------------------------------------------------- RoCE --
def install_roce_dra_driver(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    """The AWS ConnectX RoCE DRA driver: DeviceClass :data:`ROCE_DEVICE_CLASS` and, per GPU node,
    a ResourceSlice with one ``rocep<N>s0`` device per GPU (``options["devices_per_node"]``)."""
    ns = "aws-roce-dra-driver"
    _namespace(fc, ns)
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


# ------------------------------------------------------------------------------------ profiles --
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


def install_nvsentinel(fc: FakeCluster, profile: ClusterProfile, comp: Component) -> None:
    _namespace(fc, "nvsentinel")
    deployment(
        fc,
        "nvsentinel",
        "nvsentinel-platform-connector",
        "ghcr.io/nvidia/nvsentinel/platform-connector:v0.4.0",
        _system_node(profile),
        labels={"app.kubernetes.io/name": "nvsentinel"},
    )


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
            gpu_product="NVIDIA-H100-80GB-HBM3",
            gpus_per_node=8,
            cpu="208",
            memory="1922Gi",
            ephemeral_storage="6000Gi",
            labels={
                **gke,
                "cloud.google.com/gke-nodepool": "a3mega-pool",
                "cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb",
                "cloud.google.com/gke-gpu": "true",
                "node-role.aicr.run/gpu": "true",
            },
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


PROFILES: dict[str, Callable[[], ClusterProfile]] = {
    "h100-eks-training": h100_eks_training,
    "gb200-eks-training": gb200_eks_training,
    "h100-eks-inference": h100_eks_inference,
    "h100-gke-training": h100_gke_training,
    "gb300-eks-roce-training": gb300_eks_roce_training,
}


# -------------------------------------------------------------------------------------- faults --
def fault_device_plugin_crashloop(profile: ClusterProfile) -> None:
    """One device-plugin pod crash-loops; DaemonSet not fully ready; ClusterPolicy notReady."""
    comp = profile.component("gpu-operator")
    nodes = profile.gpu_node_names()
    if comp is not None and nodes:
        comp.options.setdefault("crashloop", {})["nvidia-device-plugin-daemonset"] = [nodes[0]]


def fault_gpu_operator_missing(profile: ClusterProfile) -> None:
    """No GPU Operator at all: no namespace/CRD/objects, no GFD labels, no nvidia.com/gpu resource."""
    profile.remove("gpu-operator")
    for pool in profile.gpu_pools():
        pool.labels = {k: v for k, v in pool.labels.items() if not k.startswith("nvidia.com/")}
    # Nothing advertises GPUs: keep the instance type, drop the GPU product/resource.
    for pool in profile.node_pools:
        if pool.gpu_product:
            pool.extra_resources = dict(pool.extra_resources)
            pool.gpu_product = None
            pool.gpus_per_node = 0


def fault_no_kai(profile: ClusterProfile) -> None:
    """KAI scheduler not installed."""
    profile.remove("kai-scheduler")


def fault_gpu_node_cordoned(profile: ClusterProfile) -> None:
    """The first GPU node is cordoned (spec.unschedulable + unschedulable taint)."""
    nodes = profile.gpu_node_names()
    if nodes:
        profile.cordoned.append(nodes[0])


def fault_nvidia_smi_missing_gpu(profile: ClusterProfile) -> None:
    """Stub: recorded in ``state["faults"]``; the nvidia-smi player shows one GPU fewer on the last node."""


def fault_nccl_low_bandwidth(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; the NCCL player reports ~1/4 of healthy bus bandwidth."""


def fault_nccl_socket_fallback(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; the NCCL player logs ``NCCL INFO Using network Socket``."""


def fault_nccl_launcher_never_starts(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; the NCCL launcher pod stays Pending (ImagePullBackOff)."""


def fault_dynamo_crd_missing(profile: ClusterProfile) -> None:
    """Dynamo operator not deployed: no ``dynamo-system`` namespace, no DynamoGraphDeployment CRD."""
    profile.remove("dynamo-platform")


def fault_inference_stub(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; :mod:`aicr_pytest.testing.players.inference` honours it."""


def fault_tcpxo_plugin_missing(profile: ClusterProfile) -> None:
    """GKE's TCPXO NCCL plugin installer has not reached the last GPU node: its
    ``/home/kubernetes/bin/nvidia/lib64/nccl-env-profile.sh`` is missing (the TCPXO preflight
    fails there and FasTrak cannot load)."""
    comp = profile.component("kube-system")
    nodes = profile.gpu_node_names()
    if comp is not None and nodes:
        comp.options.setdefault("tcpxo_missing", []).append(nodes[-1])


def fault_gke_gpu_nics_incomplete(profile: ClusterProfile) -> None:
    """Multi-NIC networking half set up: only 6 of the 8 ``gpu-nic`` GKE Networks exist."""
    comp = profile.component("kube-system")
    if comp is not None:
        comp.options["gpu_nics"] = 6


def fault_roce_driver_missing(profile: ClusterProfile) -> None:
    """No RoCE DRA driver: no ``roce.networking.k8s.aws`` DeviceClass or ResourceSlices, so RoCE
    workers get no NICs and NCCL falls back to ``Socket``."""
    profile.remove("roce-dra-driver")


def fault_nccl_stub(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; :mod:`aicr_pytest.testing.players.nccl` honours it."""


FAULTS: dict[str, Callable[[ClusterProfile], None]] = {
    "dynamo-crd-missing": fault_dynamo_crd_missing,
    "inference-low-throughput": fault_inference_stub,
    "inference-endpoint-down": fault_inference_stub,
    "device-plugin-crashloop": fault_device_plugin_crashloop,
    "gpu-operator-missing": fault_gpu_operator_missing,
    "no-kai": fault_no_kai,
    "nccl-low-bandwidth": fault_nccl_low_bandwidth,
    "nccl-socket-fallback": fault_nccl_socket_fallback,
    "nccl-launcher-never-starts": fault_nccl_launcher_never_starts,
    "gpu-node-cordoned": fault_gpu_node_cordoned,
    "nvidia-smi-missing-gpu": fault_nvidia_smi_missing_gpu,
    "nccl-launcher-log-rotated": fault_nccl_stub,
    "trainer-webhook-cache-lag": fault_nccl_stub,
    "trainer-webhook-never-admits": fault_nccl_stub,
    "tcpxo-plugin-missing": fault_tcpxo_plugin_missing,
    "gke-gpu-nics-incomplete": fault_gke_gpu_nics_incomplete,
    "roce-driver-missing": fault_roce_driver_missing,
}


def apply_fault(profile: ClusterProfile, name: str) -> None:
    try:
        fn = FAULTS[name]
    except KeyError:
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(FAULTS))}") from None
    fn(profile)
    if name not in profile.faults:
        profile.faults.append(name)


def resolve_profile(profile: str | ClusterProfile | None, faults: Iterable[str] = ()) -> ClusterProfile:
    """A fresh profile (by name, a copy of a given one, or empty) with ``faults`` applied."""
    if profile is None:
        result = ClusterProfile(name="empty")
    elif isinstance(profile, ClusterProfile):
        result = copy.deepcopy(profile)
    else:
        try:
            result = PROFILES[profile]()
        except KeyError:
            raise ValueError(f"unknown profile {profile!r}; known: {', '.join(sorted(PROFILES))}") from None
    for name in faults:
        apply_fault(result, name)
    return result
