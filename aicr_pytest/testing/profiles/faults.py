"""Named faults: functions that mutate a :class:`~aicr_pytest.testing.model.ClusterProfile` before it
is applied (see :mod:`aicr_pytest.testing.profiles` for the list and what each one does)."""

from __future__ import annotations

from collections.abc import Callable

from aicr_pytest.testing.builders import add_namespace, daemonset
from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster
from aicr_pytest.testing.store import Obj

__all__ = ["FAULTS", "apply_fault"]


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
    """Older driver-side fault (see gpu-missing): nvidia-smi lists one GPU fewer on the last GPU node."""


def fault_driver_below_floor(profile: ClusterProfile) -> None:
    """The last GPU node's host driver is an R535 one: below a ``Deployment.gpu-driver.version`` floor."""


def fault_driver_r595(profile: ClusterProfile) -> None:
    """The last GPU node runs an R595 driver, which has no ``NVreg_GrdmaPciTopoCheckOverride`` (the
    NCCL NET preflight's probe reads it; :mod:`aicr_pytest.testing.players.nvreg_probe`)."""


GPU_RESOURCE = "nvidia.com/gpu"


def _last_gpu_node(fc: SimulatedCluster) -> Obj | None:
    """The last node in name order that GFD labels with a GPU count, or ``None``."""
    labelled = "nvidia.com/gpu.count"
    nodes = [n for n in fc.list("v1", "Node") if labelled in (n["metadata"].get("labels") or {})]
    return max(nodes, key=lambda n: str(n["metadata"]["name"])) if nodes else None


def _lose_one_allocatable_gpu(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    node = _last_gpu_node(fc)
    if node is None:
        return
    allocatable = node.setdefault("status", {}).setdefault("allocatable", {})
    gpus = int(str(allocatable.get(GPU_RESOURCE, "0")))
    if gpus > 0:
        allocatable[GPU_RESOURCE] = str(gpus - 1)
        fc.add(node)


def fault_gpu_diag_fail(profile: ClusterProfile) -> None:
    """The last GPU of the last GPU node in name order fails DCGM's memory test (diag level 2 and up)."""


def fault_uvm_missing(profile: ClusterProfile) -> None:
    """The last GPU node in name order has no /dev/nvidia-uvm: a CUDA kernel fails on each of its GPUs."""


def fault_gpu_xid(profile: ClusterProfile) -> None:
    """The last GPU of the last GPU node in name order raises XID 79 during gpu-health's window."""


def fault_gpu_driver_missing(profile: ClusterProfile) -> None:
    """The last GPU node in name order: its driver (DCGM exporter) lists one GPU fewer than GFD says."""


def fault_gpu_missing(profile: ClusterProfile) -> None:
    """The last GPU node in name order advertises 8 GPUs (GFD) but only 7 are allocatable."""
    profile.components.append(Component("gpu-missing", _lose_one_allocatable_gpu))


def fault_nccl_low_bandwidth(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; the NCCL player reports ~1/4 of healthy bus bandwidth."""


def fault_nccl_slow_node(profile: ClusterProfile) -> None:
    """NCCL bus bandwidth collapses (a tenth) whenever the last GPU node in name order takes part."""


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


def fault_gvnic_displaces_gpu_nic(profile: ClusterProfile) -> None:
    """(GKE) The last GPU node's pool has a gVNIC additional network: its ``nic-info`` shows ``gve1``
    in eth8's PCI slot (7 of 8 GPU NICs)."""
    comp = profile.component("kube-system")
    nodes = profile.gpu_node_names()
    if comp is not None and nodes:
        comp.options.setdefault("gvnic_displaced", []).append(nodes[-1])


def fault_roce_driver_missing(profile: ClusterProfile) -> None:
    """No RoCE DRA driver: no ``roce.networking.k8s.aws`` DeviceClass or ResourceSlices, so RoCE
    workers get no NICs and NCCL falls back to ``Socket``."""
    profile.remove("roce-dra-driver")


def fault_snapshot_stub(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; :mod:`aicr_pytest.testing.players.snapshot_agent` honours it."""


def fault_dra_gpu_slices_missing(profile: ClusterProfile) -> None:
    """The DRA driver runs ComputeDomains only: ``compute-domain.nvidia.com`` slices, no
    ``gpu.nvidia.com`` DeviceClass or slices (``resources.gpus.enabled=false``)."""
    comp = profile.component("nvidia-dra-driver-gpu")
    if comp is not None:
        comp.options["gpus"] = False
        comp.options["compute_domain_slices"] = True


def fault_trainer_webhook_missing(profile: ClusterProfile) -> None:
    """Kubeflow Trainer without its validating webhook configuration (and webhook Service)."""
    comp = profile.component("kubeflow-trainer")
    if comp is not None:
        comp.options["webhook"] = False


def fault_trainer_controller_down(profile: ClusterProfile) -> None:
    """Kubeflow Trainer's controller manager has no ready replica (its webhook Service no endpoint)."""
    comp = profile.component("kubeflow-trainer")
    if comp is not None:
        comp.options["controller_down"] = True


def fault_kai_scheduler_down(profile: ClusterProfile) -> None:
    """The KAI scheduler's own Deployment (``kai-scheduler-default``) has no ready replica."""
    comp = profile.component("kai-scheduler")
    if comp is not None:
        comp.options["scheduler_down"] = True


def fault_operator_lease_stale(profile: ClusterProfile) -> None:
    """The AI operators' leader-election Leases were last renewed 10 minutes ago (no live leader)."""
    for name in ("kubeflow-trainer", "dynamo-platform"):
        comp = profile.component(name)
        if comp is not None:
            comp.options["lease_stale"] = True


def fault_trainer_runtimes_missing(profile: ClusterProfile) -> None:
    """Kubeflow Trainer runs but holds no ClusterTrainingRuntime (nothing to reconcile)."""
    comp = profile.component("kubeflow-trainer")
    if comp is not None:
        comp.options["runtimes"] = False


def fault_dynamo_graphs_missing(profile: ClusterProfile) -> None:
    """The Dynamo operator runs but no DynamoGraphDeployment exists (nothing to reconcile)."""
    comp = profile.component("dynamo-platform")
    if comp is not None:
        comp.options["graph"] = False


def fault_dcgm_servicemonitor_missing(profile: ClusterProfile) -> None:
    """The DCGM exporter serves its metrics but nothing scrapes it: no ServiceMonitor selects it."""
    comp = profile.component("gpu-operator")
    if comp is not None:
        comp.options["service_monitor"] = False


def _grant_anonymous(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    fc.add(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "sim-anonymous-workloads"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["pods", "secrets", "nodes"],
                    "verbs": ["get", "list", "create"],
                }
            ],
        }
    )
    fc.add(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "sim-anonymous-workloads"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "sim-anonymous-workloads",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"}
            ],
        }
    )


def fault_anonymous_access_allowed(profile: ClusterProfile) -> None:
    """A ClusterRoleBinding lets unauthenticated clients read and create pods, secrets and nodes."""
    profile.components.append(Component("anonymous-access-allowed", _grant_anonymous))


def fault_conformance_stub(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; :mod:`aicr_pytest.testing.players.conformance` honours it."""


def fault_nccl_stub(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; :mod:`aicr_pytest.testing.players.nccl` honours it."""


def fault_metrics_stub(profile: ClusterProfile) -> None:
    """Recorded in ``state["faults"]``; :mod:`aicr_pytest.testing.players.metrics` honours it."""


def fault_dynamo_metrics_missing(profile: ClusterProfile) -> None:
    """Dynamo serves but Prometheus has no ``dynamo_*`` series (nothing scrapes its pods)."""


def fault_prometheus_adapter_missing(profile: ClusterProfile) -> None:
    """No prometheus-adapter: no Deployment, Service or APIServices (neither metrics API is served)."""
    comp = profile.component("kube-prometheus-stack")
    if comp is not None:
        comp.options["adapter"] = False


def fault_hpa_never_scales(profile: ClusterProfile) -> None:
    """Recorded; the HPA controller of :mod:`aicr_pytest.testing.players.autoscaling` gets no metric."""


def fault_no_managed_node_group(profile: ClusterProfile) -> None:
    """No node autoscaling to find: no Karpenter, and no node carries a managed node-group label."""
    profile.remove("karpenter")
    for pool in profile.node_pools:
        pool.labels = {
            k: v for k, v in pool.labels.items() if k not in ("eks.amazonaws.com/nodegroup", "nodeGroup")
        }


def fault_karpenter_unhealthy(profile: ClusterProfile) -> None:
    """Karpenter's controller Deployment has no available replica."""
    comp = profile.component("karpenter")
    if comp is not None:
        comp.options["unhealthy"] = True


def fault_gateway_open(profile: ClusterProfile) -> None:
    """The gateway's LoadBalancer Service has no ``loadBalancerSourceRanges`` (open to 0.0.0.0/0)."""
    comp = profile.component("agentgateway")
    if comp is not None:
        comp.options["load_balancer"] = True
        comp.options["source_ranges"] = []


DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _strip_default_storage_class(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    for sc in fc.list("storage.k8s.io/v1", "StorageClass"):
        annotations = sc["metadata"].get("annotations") or {}
        if any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS):
            kept = {k: v for k, v in annotations.items() if k not in DEFAULT_CLASS_ANNOTATIONS}
            sc["metadata"]["annotations"] = kept
            fc.add(sc)


def fault_no_default_storageclass(profile: ClusterProfile) -> None:
    """No default StorageClass: the cluster's classes exist, none annotated default (EKS without gp3)."""
    profile.components.append(Component("no-default-storageclass", _strip_default_storage_class))


def fault_slurm_stub(profile: ClusterProfile) -> None:
    """Recorded; :mod:`aicr_pytest.testing.players.slinky` honours it."""


def fault_cre_stub(profile: ClusterProfile) -> None:
    """Recorded; :mod:`aicr_pytest.testing.players.cre` honours it."""


def fault_slurm_gpu_isolation_broken(profile: ClusterProfile) -> None:
    """Slinky's GPU NodeSet holds its nodes' GPUs, but Slurm does not confine a job without a GPU
    request (:mod:`aicr_pytest.testing.players.slinky` honours the recorded name)."""
    comp = profile.component("slinky-slurm")
    if comp is not None:
        comp.options["nodeset_gpus"] = True


# --- the CNCF SHOULD checks (gpu-sharing, driver-runtime-management, workload-sandboxing,
# high-performance-networking) ---------------------------------------------------------------

SKEWED_DRIVER = "570.172.08"
SKEWED_RUNTIME = "containerd://1.6.36"
RDMA_RESOURCE_PREFIXES = ("vpc.amazonaws.com/efa", "rdma/", "nvidia.com/hostdev")


def _skew_last_gpu_node(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    node = _last_gpu_node(fc)
    if node is None:
        return
    labels = node["metadata"].setdefault("labels", {})
    if comp.options.get("driver"):
        labels["nvidia.com/cuda.driver-version.full"] = SKEWED_DRIVER
        labels["nvidia.com/cuda.driver.major"] = SKEWED_DRIVER.split(".")[0]
    if comp.options.get("runtime"):
        node.setdefault("status", {}).setdefault("nodeInfo", {})["containerRuntimeVersion"] = SKEWED_RUNTIME
    fc.add(node)


def fault_driver_version_skew(profile: ClusterProfile) -> None:
    """The last GPU node in name order runs another GPU driver (GFD ``cuda.driver-version.full``)."""
    profile.components.append(Component("driver-version-skew", _skew_last_gpu_node, {"driver": True}))


def fault_runtime_version_skew(profile: ClusterProfile) -> None:
    """The last GPU node in name order runs another container runtime (``containerRuntimeVersion``)."""
    profile.components.append(Component("runtime-version-skew", _skew_last_gpu_node, {"runtime": True}))


def fault_no_rdma_resources(profile: ClusterProfile) -> None:
    """No node advertises an RDMA NIC resource (``vpc.amazonaws.com/efa`` and the like are gone)."""
    for pool in profile.node_pools:
        pool.extra_resources = {
            k: v for k, v in pool.extra_resources.items() if not k.startswith(RDMA_RESOURCE_PREFIXES)
        }


def _gvisor_runtime_class(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    fc.add(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "gvisor"},
            "handler": "runsc",
        }
    )


RDMA_FABRIC_RESOURCE = "rdma/hca_shared_devices_a"
MELLANOX_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
RDMA_HCA_MAX = "1000"


def rdma_fabric_nodes(gpu_nodes: list[str], *, not_ready: str | None) -> dict[str, str | None]:
    """The RDMA fabric the network operator stands up: every GPU node carries the Mellanox NFD label
    and advertises :data:`RDMA_FABRIC_RESOURCE` (``None``: not yet, on ``not_ready``)."""
    return {n: (None if n == not_ready else RDMA_HCA_MAX) for n in gpu_nodes}


def _rdma_not_ready(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    nodes = sorted(profile.gpu_node_names())
    for name, count in rdma_fabric_nodes(nodes, not_ready=nodes[-1] if nodes else None).items():
        node = fc.find("v1", "Node", name)
        if node is None:
            continue
        node["metadata"].setdefault("labels", {})[MELLANOX_LABEL] = "true"
        status = node.setdefault("status", {})
        for key in ("capacity", "allocatable"):
            if count is not None:
                status.setdefault(key, {})[RDMA_FABRIC_RESOURCE] = count
        fc.add(node)


def fault_rdma_not_ready(profile: ClusterProfile) -> None:
    """The network operator's RDMA fabric is still rolling out: every GPU node carries the Mellanox NFD
    label, all but the last (in name order) advertise ``rdma/hca_shared_devices_a``."""
    profile.components.append(Component("rdma-not-ready", _rdma_not_ready))


NVML_MOCK_IMAGE = "ghcr.io/nvidia/nvml-mock:v0.1.0"


def _nvml_mock(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    add_namespace(fc, "nvml-mock")
    labels = {"app.kubernetes.io/name": "nvml-mock", "app.kubernetes.io/instance": "nvml-mock"}
    daemonset(fc, "nvml-mock", "nvml-mock", NVML_MOCK_IMAGE, profile.gpu_node_names(), labels=labels)


def fault_nvml_mock(profile: ClusterProfile) -> None:
    """The GPUs are NVIDIA's NVML mock: its ``nvml-mock`` DaemonSet (image ``ghcr.io/nvidia/nvml-mock``)
    runs on every GPU node, so pods really run but answer nvidia-smi from a mock."""
    profile.components.append(Component("nvml-mock", _nvml_mock))


def fault_sandbox_kernel_shared(profile: ClusterProfile) -> None:
    """A ``gvisor`` RuntimeClass (handler ``runsc``) whose pods run on the node's own kernel
    (:mod:`aicr_pytest.testing.players.sandbox` honours the recorded name)."""
    profile.components.append(Component("gvisor-runtime-class", _gvisor_runtime_class))


def fault_imex_stub(profile: ClusterProfile) -> None:
    """Recorded; :mod:`aicr_pytest.testing.players.imex` honours it."""


def fault_kueue_gang(profile: ClusterProfile) -> None:
    """Kueue instead of KAI: KAI removed; :mod:`aicr_pytest.testing.players.kueue` installs Kueue's
    CRDs and plays its quota admission (it honours the recorded name)."""
    profile.remove("kai-scheduler")


FAULTS: dict[str, Callable[[ClusterProfile], None]] = {
    "prometheus-down": fault_metrics_stub,
    "dcgm-exporter-no-gpu-series": fault_metrics_stub,
    "prometheus-adapter-missing": fault_prometheus_adapter_missing,
    "dynamo-metrics-missing": fault_dynamo_metrics_missing,
    "hpa-never-scales": fault_hpa_never_scales,
    "no-managed-node-group": fault_no_managed_node_group,
    "karpenter-unhealthy": fault_karpenter_unhealthy,
    "gateway-open": fault_gateway_open,
    "slurm-controller-down": fault_slurm_stub,
    "imex-channels-shared": fault_slurm_stub,
    "slurm-gpu-isolation-broken": fault_slurm_gpu_isolation_broken,
    "cre-bandwidth-low": fault_cre_stub,
    "cre-goodput-low": fault_cre_stub,
    "cre-certification-failed": fault_cre_stub,
    "cre-certification-stuck": fault_cre_stub,
    "cre-measurement-unparsable": fault_cre_stub,
    "dynamo-crd-missing": fault_dynamo_crd_missing,
    "no-default-storageclass": fault_no_default_storageclass,
    "inference-low-throughput": fault_inference_stub,
    "inference-endpoint-down": fault_inference_stub,
    "device-plugin-crashloop": fault_device_plugin_crashloop,
    "gpu-operator-missing": fault_gpu_operator_missing,
    "no-kai": fault_no_kai,
    "nccl-low-bandwidth": fault_nccl_low_bandwidth,
    "nccl-bandwidth-regression": fault_nccl_stub,
    "nccl-socket-fallback": fault_nccl_socket_fallback,
    "nccl-slow-node": fault_nccl_slow_node,
    "nccl-launcher-never-starts": fault_nccl_launcher_never_starts,
    "gpu-node-cordoned": fault_gpu_node_cordoned,
    "nvidia-smi-missing-gpu": fault_nvidia_smi_missing_gpu,
    "driver-below-floor": fault_driver_below_floor,
    "driver-r595": fault_driver_r595,
    "gpu-missing": fault_gpu_missing,
    "gpu-driver-missing": fault_gpu_driver_missing,
    "gpu-diag-fail": fault_gpu_diag_fail,
    "gpu-xid": fault_gpu_xid,
    "uvm-missing": fault_uvm_missing,
    "nccl-launcher-log-rotated": fault_nccl_stub,
    "trainer-webhook-cache-lag": fault_nccl_stub,
    "trainer-webhook-never-admits": fault_nccl_stub,
    "tcpxo-plugin-missing": fault_tcpxo_plugin_missing,
    "gke-gpu-nics-incomplete": fault_gke_gpu_nics_incomplete,
    "gvnic-displaces-gpu-nic": fault_gvnic_displaces_gpu_nic,
    "roce-driver-missing": fault_roce_driver_missing,
    "snapshot-agent-log-truncated": fault_snapshot_stub,
    "dra-gpu-slices-missing": fault_dra_gpu_slices_missing,
    "kai-forbidden": fault_conformance_stub,
    "kai-gang-split": fault_conformance_stub,
    "kai-queue-missing": fault_conformance_stub,
    "trainer-webhook-missing": fault_trainer_webhook_missing,
    "trainer-controller-down": fault_trainer_controller_down,
    "kai-scheduler-down": fault_kai_scheduler_down,
    "operator-lease-stale": fault_operator_lease_stale,
    "trainer-runtimes-missing": fault_trainer_runtimes_missing,
    "dynamo-graphs-missing": fault_dynamo_graphs_missing,
    "dcgm-servicemonitor-missing": fault_dcgm_servicemonitor_missing,
    "anonymous-access-allowed": fault_anonymous_access_allowed,
    "trainer-webhook-admits": fault_conformance_stub,
    "trainer-schema-rejects": fault_conformance_stub,
    "gpu-isolation-broken": fault_conformance_stub,
    "gpu-visible-without-allocation": fault_conformance_stub,
    "gpu-test-image-pull": fault_conformance_stub,
    "clusterpolicy-not-ready": fault_conformance_stub,
    "driver-version-skew": fault_driver_version_skew,
    "runtime-version-skew": fault_runtime_version_skew,
    "no-rdma-resources": fault_no_rdma_resources,
    "sandbox-kernel-shared": fault_sandbox_kernel_shared,
    "kueue-gang": fault_kueue_gang,
    "gang-partial-admission": fault_kueue_gang,
    "nvml-mock": fault_nvml_mock,
    "rdma-not-ready": fault_rdma_not_ready,
    "imex-channel-missing": fault_imex_stub,
}


def apply_fault(profile: ClusterProfile, name: str) -> None:
    try:
        fn = FAULTS[name]
    except KeyError:
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(FAULTS))}") from None
    fn(profile)
    if name not in profile.faults:
        profile.faults.append(name)
