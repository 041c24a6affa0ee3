"""Installers of the components AICR deploys, for :mod:`aicr_pytest.testing.profiles`.

Each installer is ``install(fc, profile, component)`` (:data:`~aicr_pytest.testing.model.Installer`):
it creates the namespaces, CRDs, workloads (with Running pods) and status a healthy install of that
component has, honouring ``component.options`` that faults set (crash-looping pods, missing parts).
Namespaces follow the AICR component registry's ``defaultNamespace``.  The monitoring stack
(kube-prometheus-stack, prometheus-adapter) is in :mod:`.monitoring`.
"""

from __future__ import annotations

from aicr_pytest.testing.builders import (
    add_namespace,
    crd,
    crd_established,
    daemonset,
    default_storage_class,
    deployment,
    system_node,
)
from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster
from aicr_pytest.testing.profiles.leases import OPERATOR_LEASES, hold_lease
from aicr_pytest.testing.store import Obj

GPU_OPERATOR_VERSION = "v25.10.0"
#: KAI scheduler's Deployments in ``kai-scheduler`` (what gang-scheduling waits on)
KAI_DEPLOYMENTS = (
    "kai-operator",
    "kai-scheduler-default",
    "admission",
    "binder",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
)
TRAINER_WEBHOOK_CONFIG = "validator.trainer.kubeflow.org"
DYNAMO_WORKLOAD_NAMESPACE = "dynamo-workload"
DYNAMO_RUNTIME_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.1"
DYNAMO_WEBHOOK_CONFIG = "dynamo-platform-dynamo-operator-validating-webhook-configuration"
DYNAMO_WEBHOOK_SERVICE = "dynamo-platform-dynamo-operator-webhook-service"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
#: GPU Feature Discovery's NVLink clique label: only multi-node NVLink (GB200/GB300 NVL72) nodes carry it
CLIQUE_LABEL = "nvidia.com/gpu.clique"
IMEX_CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
#: the node selector a "down" controller's pod template gets: no node carries it, so its pods stay
#: Pending (on the control plane too, where the real scheduler leaves them unbound)
UNSCHEDULABLE_SELECTOR = {"aicr.test/unschedulable": "true"}


def compute_domain_slice(node: str) -> Obj:
    """The ComputeDomain kubelet plugin's ResourceSlice on ``node``: IMEX channel 0 and its daemon."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{COMPUTE_DOMAIN_DRIVER}"},
        "spec": {
            "driver": COMPUTE_DOMAIN_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"{kind}-0", "attributes": {"type": {"string": kind}, "id": {"int": 0}}}
                for kind in ("channel", "daemon")
            ],
        },
    }


def compute_domain_channel_class() -> Obj:
    """The DeviceClass of a ComputeDomain's default IMEX channel (as the DRA driver's chart installs it)."""
    attrs = f"device.attributes['{COMPUTE_DOMAIN_DRIVER}']"
    expression = f"device.driver == '{COMPUTE_DOMAIN_DRIVER}' && {attrs}.type == 'channel' && {attrs}.id == 0"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": IMEX_CHANNEL_CLASS},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def webhook_service(fc: SimulatedCluster, namespace: str, name: str, app: str, *, ready: bool = True) -> None:
    """The Service in front of an operator's webhook server (443 → 9443) and the EndpointSlice the
    EndpointSlice controller would publish for its pod (no endpoint when the pod is not ``ready``)."""
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "type": "ClusterIP",
                "ports": [{"name": "webhook", "port": 443, "targetPort": 9443, "protocol": "TCP"}],
                "selector": {"app": app},
            },
        }
    )
    fc.add(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-webhook",
                "namespace": namespace,
                "labels": {
                    "kubernetes.io/service-name": name,
                    "endpointslice.kubernetes.io/managed-by": "sim",
                },
            },
            "addressType": "IPv4",
            "ports": [{"name": "webhook", "port": 9443, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["192.168.0.10"], "conditions": {"ready": True}}] if ready else [],
        }
    )


def dcgm_service_monitor(namespace: str) -> Obj:
    """The ServiceMonitor the GPU operator creates for its DCGM exporter Service."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {
            "name": "nvidia-dcgm-exporter",
            "namespace": namespace,
            "labels": {"app": "nvidia-dcgm-exporter"},
        },
        "spec": {
            "selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{"port": "gpu-metrics", "path": "/metrics", "interval": "15s"}],
        },
    }


def controller_down(fc: SimulatedCluster, namespace: str, name: str) -> None:
    """Deployment ``name`` has no ready replica: its pods are gone and its template cannot be
    scheduled (:data:`UNSCHEDULABLE_SELECTOR`), so none comes back."""
    for pod in fc.list("v1", "Pod", namespace, label_selector=f"app={name}"):
        fc.delete("v1", "Pod", pod["metadata"]["name"], namespace)
    dep = fc.find("apps/v1", "Deployment", name, namespace)
    if dep is not None:
        dep["spec"]["template"]["spec"]["nodeSelector"] = dict(UNSCHEDULABLE_SELECTOR)
        fc.add(dep)
    fc.sim.set_deployment_status(namespace, name, ready=0)


def validating_webhook(name: str, namespace: str, service: str, hooks: list[tuple[str, str, str]]) -> Obj:
    """A ValidatingWebhookConfiguration whose webhooks (name, group, plural) judge CREATEs (an UPDATE --
    the garbage collector removing a finalizer of an object being deleted -- is never theirs to refuse)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": hook,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
                "clientConfig": {
                    "service": {
                        "name": service,
                        "namespace": namespace,
                        "path": f"/validate-{group.replace('.', '-')}-{plural}",
                        "port": 443,
                    }
                },
                "rules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["*"],
                        "operations": ["CREATE"],
                        "resources": [plural],
                        "scope": "*",
                    }
                ],
            }
            for hook, group, plural in hooks
        ],
    }


def install_kube_system(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    sysnode = system_node(profile)
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
    default_storage_class(fc, "gp3", "ebs.csi.aws.com")


def install_nfd(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "node-feature-discovery"
    add_namespace(fc, ns)
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    deployment(
        fc,
        ns,
        "node-feature-discovery-master",
        "registry.k8s.io/nfd/node-feature-discovery:v0.17.3",
        system_node(profile),
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


def install_gpu_operator(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "gpu-operator"
    add_namespace(fc, ns)
    version = comp.options.get("version", GPU_OPERATOR_VERSION)
    crd_established(fc, crd("nvidia.com", "clusterpolicies", "ClusterPolicy", ["v1"], namespaced=False))
    crd_established(fc, crd("nvidia.com", "nvidiadrivers", "NVIDIADriver", ["v1alpha1"], namespaced=False))
    deployment(
        fc,
        ns,
        "gpu-operator",
        f"nvcr.io/nvidia/gpu-operator:{version}",
        system_node(profile),
        labels={
            "app.kubernetes.io/name": "gpu-operator",
            "app.kubernetes.io/version": version,
            "app.kubernetes.io/component": "gpu-operator",
        },
    )
    gpu_nodes = profile.gpu_node_names()
    crash = comp.options.get("crashloop", {})
    device_plugin = bool(comp.options.get("device_plugin", True))
    for name, image, container in GPU_OPERATOR_DAEMONSETS:
        if name == "nvidia-device-plugin-daemonset" and not device_plugin:
            continue  # devicePlugin.enabled=false: GPUs are DRA-allocated only
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
    # the exporter's Service (the GPU operator's dcgm-exporter: port 9400, ``gpu-metrics``)
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "nvidia-dcgm-exporter",
                "namespace": ns,
                "labels": {"app": "nvidia-dcgm-exporter"},
            },
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": "nvidia-dcgm-exporter"},
                "ports": [{"name": "gpu-metrics", "port": 9400, "targetPort": 9400, "protocol": "TCP"}],
            },
        }
    )
    if comp.options.get("service_monitor", True) and profile.component("kube-prometheus-stack") is not None:
        fc.add(dcgm_service_monitor(ns))  # ClusterPolicy dcgmExporter.serviceMonitor.enabled
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
                "devicePlugin": {"enabled": device_plugin},
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


def install_dra_driver(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "nvidia-dra-driver"
    add_namespace(fc, ns)
    image = "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0"
    crd_established(fc, crd("resource.nvidia.com", "computedomains", "ComputeDomain", ["v1beta1"]))
    deployment(
        fc,
        ns,
        "nvidia-dra-driver-gpu-controller",
        image,
        system_node(profile),
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
    clique = [
        pool.node_name(i)
        for pool in profile.gpu_pools()
        if pool.labels.get(CLIQUE_LABEL)
        for i in range(pool.count)
    ]
    everywhere = bool(comp.options.get("compute_domain_slices", False))
    for node in profile.gpu_node_names() if everywhere else clique:
        fc.add(compute_domain_slice(node))
    if clique:  # the driver's chart installs the channel DeviceClass; its kubelet plugin serves MNNVL nodes
        fc.add(compute_domain_channel_class())
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


def install_kai(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "kai-scheduler"
    add_namespace(fc, ns)
    version = "v0.9.3"
    crd_established(fc, crd("scheduling.run.ai", "queues", "Queue", ["v2"], namespaced=False))
    crd_established(fc, crd("scheduling.run.ai", "podgroups", "PodGroup", ["v2alpha2"]))
    crd_established(fc, crd("kai.scheduler", "configs", "Config", ["v1"], namespaced=False))
    sysnode = system_node(profile)
    for name in KAI_DEPLOYMENTS:
        deployment(
            fc,
            ns,
            name,
            f"ghcr.io/nvidia/kai-scheduler/{name}:{version}",
            sysnode,
            labels={"app.kubernetes.io/part-of": "kai-scheduler"},
        )
    webhook_service(fc, ns, "admission", "admission")
    if comp.options.get("scheduler_down"):
        controller_down(fc, ns, "kai-scheduler-default")
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


def install_kubeflow_trainer(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "kubeflow"
    add_namespace(fc, ns)
    group = "trainer.kubeflow.org"
    crd_established(fc, crd(group, "trainjobs", "TrainJob", ["v1alpha1"]))
    crd_established(fc, crd(group, "trainingruntimes", "TrainingRuntime", ["v1alpha1"]))
    crd_established(
        fc, crd(group, "clustertrainingruntimes", "ClusterTrainingRuntime", ["v1alpha1"], namespaced=False)
    )
    crd_established(fc, crd("jobset.x-k8s.io", "jobsets", "JobSet", ["v1alpha2"]))
    deployment(
        fc,
        ns,
        "kubeflow-trainer-controller-manager",
        "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.1.0",
        system_node(profile),
        labels={"app.kubernetes.io/name": "trainer"},
        container="manager",
    )
    down = bool(comp.options.get("controller_down"))
    if down:
        controller_down(fc, ns, "kubeflow-trainer-controller-manager")
    if comp.options.get("webhook", True):
        webhook_service(
            fc,
            ns,
            "kubeflow-trainer-controller-manager",
            "kubeflow-trainer-controller-manager",
            ready=not down,
        )
        fc.add(
            validating_webhook(
                TRAINER_WEBHOOK_CONFIG,
                ns,
                "kubeflow-trainer-controller-manager",
                [("validator.trainjob.trainer.kubeflow.org", group, "trainjobs")],
            )
        )
    deployment(
        fc,
        ns,
        "jobset-controller-manager",
        "registry.k8s.io/jobset/jobset:v0.10.1",
        system_node(profile),
        labels={"app.kubernetes.io/name": "jobset"},
        container="manager",
    )
    lease_ns, lease_name, lease_deployment = OPERATOR_LEASES[0]
    hold_lease(fc, lease_ns, lease_name, lease_deployment, stale=bool(comp.options.get("lease_stale")))
    for runtime in ("torch-distributed", "mpi-distributed") if comp.options.get("runtimes", True) else ():
        fc.add(
            {
                "apiVersion": f"{group}/v1alpha1",
                "kind": "ClusterTrainingRuntime",
                "metadata": {"name": runtime},
                "spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {}}},
            }
        )


def install_cert_manager(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "cert-manager"
    add_namespace(fc, ns)
    for name in ("cert-manager", "cert-manager-cainjector", "cert-manager-webhook"):
        deployment(
            fc,
            ns,
            name,
            f"quay.io/jetstack/{name}:v1.17.2",
            system_node(profile),
            labels={"app.kubernetes.io/instance": "cert-manager"},
        )


def install_dynamo(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "dynamo-system"
    add_namespace(fc, ns)
    crd_established(
        fc,
        crd(
            "nvidia.com",
            "dynamographdeployments",
            "DynamoGraphDeployment",
            ["v1beta1", "v1alpha1"],
            short_names=["dgd"],
        ),
    )
    crd_established(
        fc, crd("nvidia.com", "dynamocomponentdeployments", "DynamoComponentDeployment", ["v1alpha1"])
    )
    deployment(
        fc,
        ns,
        "dynamo-platform-dynamo-operator-controller-manager",
        "nvcr.io/nvidia/ai-dynamo/kubernetes-operator:0.6.1",
        system_node(profile),
        labels={"app.kubernetes.io/name": "dynamo-operator"},
        container="manager",
    )
    lease_ns, lease_name, lease_deployment = OPERATOR_LEASES[1]
    hold_lease(fc, lease_ns, lease_name, lease_deployment, stale=bool(comp.options.get("lease_stale")))
    if comp.options.get("graph", True):  # what the operator reconciles: one idle graph (no replicas)
        fc.add(
            {
                "apiVersion": "nvidia.com/v1beta1",
                "kind": "DynamoGraphDeployment",
                "metadata": {"name": "sample-graph", "namespace": ns},
                "spec": {"components": [{"name": "decode", "type": "worker", "replicas": 0}]},
            }
        )
    if comp.options.get("serving", True):  # a served model: frontend + worker in dynamo-workload
        add_namespace(fc, DYNAMO_WORKLOAD_NAMESPACE)
        for name, kind in (("vllm-agg-frontend", "frontend"), ("vllm-agg-decode-worker", "worker")):
            deployment(
                fc,
                DYNAMO_WORKLOAD_NAMESPACE,
                name,
                DYNAMO_RUNTIME_IMAGE,
                system_node(profile),
                labels={"nvidia.com/dynamo-component-type": kind, "nvidia.com/dynamo-component": name},
                container="main",
            )
    if comp.options.get("webhook", True):
        webhook_service(fc, ns, DYNAMO_WEBHOOK_SERVICE, "dynamo-platform-dynamo-operator-controller-manager")
        fc.add(
            validating_webhook(
                DYNAMO_WEBHOOK_CONFIG,
                ns,
                DYNAMO_WEBHOOK_SERVICE,
                [("vdynamographdeployment.nvidia.com", "nvidia.com", "dynamographdeployments")],
            )
        )


def install_nvsentinel(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    add_namespace(fc, "nvsentinel")
    deployment(
        fc,
        "nvsentinel",
        "nvsentinel-platform-connector",
        "ghcr.io/nvidia/nvsentinel/platform-connector:v0.4.0",
        system_node(profile),
        labels={"app.kubernetes.io/name": "nvsentinel"},
    )
