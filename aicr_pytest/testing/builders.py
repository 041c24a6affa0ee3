"""Building blocks shared by the profiles and the players: object builders and well-known names.

Each builder creates objects in a :class:`~aicr_pytest.testing.model.SimulatedCluster` the way the
real controllers would have left them (a Deployment or DaemonSet with Running pods and matching
status counters, an Established CRD, an Active namespace), so profiles (:mod:`.profiles`) and players
(:mod:`.players`) build clusters from the same pieces without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable

from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster
from aicr_pytest.testing.store import Obj

__all__ = [
    "GKE_GPU_NICS",
    "ROCE_DEVICE_CLASS",
    "ROCE_DRIVER",
    "TCPXO_INSTALLER",
    "add_namespace",
    "crd",
    "crd_established",
    "daemonset",
    "default_storage_class",
    "deployment",
    "running_pod",
    "system_node",
]

#: The DaemonSet (``app`` label, kube-system) of GKE's GPUDirect-TCPXO NCCL plugin installer: it
#: puts ``nccl-env-profile.sh`` and the FasTrak plugin under ``/home/kubernetes/bin/nvidia``.
TCPXO_INSTALLER = "nccl-tcpxo-installer"
#: How many ``gpu-nic<N>`` GKE Networks an a3-megagpu-8g node pool has (one per GPU).
GKE_GPU_NICS = 8
#: The DRA DeviceClass (and driver) of AWS ConnectX RoCE NICs.
ROCE_DEVICE_CLASS = "roce.networking.k8s.aws"
ROCE_DRIVER = "roce.networking.k8s.aws"


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


def crd_established(fc: SimulatedCluster, obj: Obj) -> None:
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


def add_namespace(fc: SimulatedCluster, name: str, labels: dict[str, str] | None = None) -> None:
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
    )


def default_storage_class(fc: SimulatedCluster, name: str, provisioner: str) -> None:
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


def running_pod(
    fc: SimulatedCluster,
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
    fc: SimulatedCluster,
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
        running_pod(
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
    fc: SimulatedCluster,
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
        running_pod(
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


def system_node(profile: ClusterProfile) -> str:
    for pool in profile.node_pools:
        if not (pool.gpu_product and pool.gpus_per_node):
            return pool.node_name(0)
    return profile.node_pools[0].node_name(0) if profile.node_pools else "system-0"
