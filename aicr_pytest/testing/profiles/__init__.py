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
  and the DRA driver's ComputeDomain -> IMEX ResourceClaimTemplate for ``-net``/``-nvls``; the DRA
  driver's ``compute-domain.nvidia.com`` slices and channel DeviceClass serve the clique nodes.
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
* ``h100-eks-training-dra`` -- the H100 training stack with whole GPUs from DRA only (recipe policy
  ``dra-resource-claim``, ``recipes/examples/h100-eks-training-dra.yaml``): the device plugin is off
  (no ``nvidia.com/gpu`` on the nodes, no device-plugin DaemonSet, ClusterPolicy
  ``devicePlugin.enabled: false``); ``DeviceClass gpu.nvidia.com`` and one ``gpu.nvidia.com``
  ResourceSlice per GPU node; the simulated scheduler allocates named ResourceClaims from them.
* ``h100-eks-inference`` -- the same plus Dynamo (namespace ``dynamo-system``,
  ``DynamoGraphDeployment`` CRD ``nvidia.com/v1beta1`` + ``v1alpha1``, operator Deployment, a
  served model: frontend and decode-worker Deployments in ``dynamo-workload``); the DRA
  driver runs ComputeDomains only (``resources.gpus.enabled=false``: no ``gpu.nvidia.com`` slices),
  so whole GPUs come from the device plugin alone. The inference player
  (:mod:`aicr_pytest.testing.players.inference`) plays the Dynamo operator, the endpoint and AIPerf.
* ``h100-eks-training-karpenter`` -- the training profile plus Karpenter (namespace ``karpenter``,
  ``karpenter.sh`` CRDs, NodePool ``gpu-autoscaling-test`` with an ``nvidia.com/gpu`` limit); the
  autoscaling player (:mod:`aicr_pytest.testing.players.autoscaling`) provisions its GPU nodes.
* ``h100-eks-inference-gateway`` -- the inference profile plus agentgateway (Gateway API and
  InferencePool CRDs, GatewayClass, Gateway, proxy, EndpointSlice) behind a LoadBalancer Service
  scoped to ``10.0.0.0/8``.
* ``gb200-eks-training-slurm`` -- the GB200 training profile plus Slinky Slurm (namespace ``slurm``:
  NodeSet/LoginSet, their pods, IMEX ComputeDomain and ResourceClaimTemplate); the slinky player
  (:mod:`aicr_pytest.testing.players.slinky`) answers ``pods/exec`` in the login pod.
* ``h100-eks-training-cre`` -- the H100 training profile plus NVCRE (namespace ``nvcre``, the seven
  ``nvcre.nvidia.com/v1alpha1`` CRDs, ``nvcre-manager``); the cre player
  (:mod:`aicr_pytest.testing.players.cre`) answers Certifications with Workflows and measurements.

Every profile with the GPU Operator and the Prometheus stack also serves the GPU metrics pipeline
(:mod:`aicr_pytest.testing.players.metrics`: the DCGM exporter's ``/metrics``, Prometheus queries,
prometheus-adapter's custom and external metrics APIs), and the HPA controller of the autoscaling
player scales the Deployments a run creates.

Faults:

* conformance (phase I; honoured by :mod:`aicr_pytest.testing.players.conformance`):
  ``dra-gpu-slices-missing`` -- the DRA driver runs ComputeDomains only (``resources.gpus.enabled=false``:
  ``compute-domain.nvidia.com`` slices, no ``gpu.nvidia.com`` DeviceClass/slices); with a
  ``dra-resource-claim`` recipe that is the policy mismatch;
  ``kai-forbidden`` -- KAI is installed but the validator is refused (403) KAI's CRDs and queues
  (gang-scheduling is ``other``, not skipped); ``kai-gang-split`` -- KAI binds the second
  gang worker 45 s after the first (not co-scheduled); ``kai-queue-missing`` -- no ``default-queue``;
  ``trainer-webhook-missing`` -- no ``validator.trainer.kubeflow.org`` configuration;
  ``trainer-controller-down`` -- Kubeflow Trainer's controller manager has no ready replica (and its
  webhook Service no ready endpoint); ``kai-scheduler-down`` -- KAI's ``kai-scheduler-default``
  Deployment has no ready replica (both fail the embedded health checks of expected-resources);
  ``operator-lease-stale`` -- the AI operators' leader-election Leases were last renewed 10 minutes
  ago; ``trainer-runtimes-missing`` -- no ClusterTrainingRuntime (Kubeflow Trainer has nothing to
  reconcile); ``dynamo-graphs-missing`` -- no DynamoGraphDeployment (the Dynamo operator has nothing
  to reconcile; by default the Dynamo install holds one idle graph);
  ``dcgm-servicemonitor-missing`` -- no ServiceMonitor selects the DCGM exporter (its metrics are
  served but never scraped);
  ``anonymous-access-allowed`` -- a ClusterRoleBinding grants ``system:unauthenticated`` get/list/create
  on pods, secrets and nodes (secure-accelerator-access fails its authn/authz posture);
  ``trainer-webhook-admits`` -- the Trainer webhook admits the invalid TrainJob;
  ``trainer-schema-rejects`` -- the invalid TrainJob is refused by a schema check (422 without
  ``admission webhook``), not the webhook; ``gpu-isolation-broken`` -- the ``unauthorized``
  container sees the node's GPUs; ``gpu-visible-without-allocation`` -- the no-allocation probe sees
  ``/dev/nvidia*``; ``gpu-test-image-pull`` -- the CUDA test image cannot be pulled
  (ImagePullBackOff); ``clusterpolicy-not-ready`` -- ``ClusterPolicy`` state ``notReady``.
* ``device-plugin-crashloop`` -- one device-plugin pod in ``CrashLoopBackOff`` (restartCount,
  lastState terminated Error), DaemonSet ``numberReady`` below desired, ClusterPolicy ``notReady``;
* ``gpu-operator-missing`` -- no ``gpu-operator`` namespace, CRD or objects; GPU nodes lack the
  GFD labels and the ``nvidia.com/gpu`` resource (nothing advertises them);
* ``no-kai`` -- no KAI scheduler (pods asking for ``kai-scheduler`` stay Pending, no events);
* ``gpu-node-cordoned`` -- the first GPU node is cordoned (``spec.unschedulable`` + the
  ``node.kubernetes.io/unschedulable:NoSchedule`` taint);
* ``gpu-missing`` -- the last GPU node in name order advertises 8 GPUs (GFD ``nvidia.com/gpu.count``)
  but only 7 are allocatable (``gpu-inventory`` fails naming it; ``check-nvidia-smi`` passes, as
  AICR's does: its pod gets the 7);
* ``gpu-driver-missing`` -- the last GPU node in name order still advertises 8 GPUs (GFD) and has 8
  allocatable, but its driver sees 7: its DCGM exporter lists 7 (``gpu-inventory`` fails naming the
  node and the three counts);
* ``nvidia-smi-missing-gpu`` -- the older driver-side fault: the last GPU node still advertises 8
  GPUs but nvidia-smi lists 7 (the nvidia-smi player honours it);
* ``nvml-mock`` -- NVIDIA's NVML mock stands in for the GPUs: its ``nvml-mock`` DaemonSet (image
  ``ghcr.io/nvidia/nvml-mock``) runs on every GPU node; pods run for real, so only proof of execution
  (:mod:`aicr_pytest.kube.simulators`) tells;
* ``rdma-not-ready`` -- the network operator's RDMA fabric is still rolling out: every GPU node carries
  ``feature.node.kubernetes.io/pci-15b3.present=true``, all but the last (name order) advertise
  ``rdma/hca_shared_devices_a`` (``expected-resources``' RDMA gate fails naming it, for a recipe whose
  ``network-operator`` declares a NicClusterPolicy; both backends);
* ``imex-channel-missing`` -- (multi-node NVLink) the DRA driver makes a ComputeDomain's claim
  template but the pod claiming a channel sees no IMEX channel device (the imex player,
  :mod:`aicr_pytest.testing.players.imex`, and the control plane's probe player honour it);
* ``driver-below-floor`` -- the last GPU node's nvidia-smi banner says host driver ``535.247.01``
  (below a ``Deployment.gpu-driver.version`` floor such as ``>= 580.95.05``; both backends'
  nvidia-smi players honour it);
* ``driver-r595`` -- the last GPU node's ``/proc/driver/nvidia/version`` says driver ``595.58.03``:
  the NCCL NET check's Grace-Blackwell preflight fails naming it (both backends' NVreg probe
  players honour it);
* ``nccl-low-bandwidth``, ``nccl-socket-fallback``, ``nccl-launcher-never-starts`` -- recorded in
  ``FakeCluster.state["faults"]`` (and the ``kube-public/aicr-simulator`` ConfigMap); the NCCL player
  (:mod:`aicr_pytest.testing.players.nccl`) honours them: ~1/4 bus bandwidth, ``Using network
  Socket``, a launcher pod that stays Pending;
* ``nccl-bandwidth-regression`` -- recorded too; bus bandwidth 30 % below healthy, still above the
  example recipes' floors (a baseline with ``--max-regression`` catches it; both backends' NCCL
  launchers honour it);
* ``nccl-slow-node`` -- recorded too; bus bandwidth collapses (a tenth of healthy) whenever the last
  GPU node in name order is one of an NCCL run's workers (``--isolate-bad-nodes`` names it; both
  backends' NCCL launchers honour it);
* ``nccl-launcher-log-rotated``, ``trainer-webhook-cache-lag``, ``trainer-webhook-never-admits`` --
  recorded too; the NCCL player serves a launcher log whose results table was rotated away (only a
  termination message keeps it), denies the first 3 / every TrainJob create as Trainer's webhook
  does before its cache has the runtime;
* ``tcpxo-plugin-missing`` -- (GKE) the TCPXO NCCL plugin installer is not on the last GPU node;
* ``gvnic-displaces-gpu-nic`` -- (GKE) the last GPU node's ``networking.gke.io/nic-info`` shows a gVNIC
  (``gve1``) in eth8's PCI slot, on the ``gvnic-1`` network in ``north-interfaces``
  (``gke-gpu-nic-topology`` fails naming it);
* ``gke-gpu-nics-incomplete`` -- (GKE) only 6 of the 8 ``gpu-nic`` Networks exist;
* ``roce-driver-missing`` -- (RoCE) no RoCE DRA driver, DeviceClass or ResourceSlices;
* ``dynamo-crd-missing`` -- no Dynamo operator or CRD (inference-perf skips at guard C);
* ``no-default-storageclass`` -- the StorageClasses exist but none is the default (inference-perf's
  model cache fails fast with guidance);
* ``inference-low-throughput`` -- AIPerf reports ~20,000 tokens/sec (inference-perf fails);
* ``inference-endpoint-down`` -- the frontend answers 503 to every request (endpoint timeout);
* ``prometheus-down`` -- Prometheus has no ready endpoint (the service proxy answers 503);
* ``dcgm-exporter-no-gpu-series`` -- the DCGM exporter sees no GPU (only HELP/TYPE lines), so
  Prometheus has no DCGM series and prometheus-adapter no data;
* ``prometheus-adapter-missing`` -- no adapter Deployment, Service or APIServices;
* ``dynamo-metrics-missing`` -- the Dynamo model is served but Prometheus has no ``dynamo_*`` series;
* ``hpa-never-scales`` -- the HPA controller gets no external metric and never scales;
* ``no-managed-node-group`` -- no Karpenter and no ``eks.amazonaws.com/nodegroup`` node label;
* ``karpenter-unhealthy`` -- Karpenter's controller has no available replica;
* ``gateway-open`` -- the inference gateway's LoadBalancer has no ``loadBalancerSourceRanges``;
* ``slurm-controller-down``, ``imex-channels-shared`` -- (Slinky) slurmctld does not answer; two
  concurrent IMEX jobs get the same channel;
* ``slurm-gpu-isolation-broken`` -- (Slinky) the GPU NodeSet holds its nodes' GPUs, and a Slurm job
  without a GPU request can open every one of them;
* ``cre-bandwidth-low``, ``cre-goodput-low``, ``cre-certification-failed``, ``cre-certification-stuck``,
  ``cre-measurement-unparsable`` -- (NVCRE, ``h100-eks-training-cre``) the Certification measures
  ~120 GB/s or a 0.41 goodput ratio, ends ``Failed``, never ends, or reports ``"n/a"`` measurements
  (:mod:`aicr_pytest.testing.players.cre`);
* ``snapshot-agent-log-truncated`` -- the snapshot agent's log is cut inside its ``sysctl`` section
  (:mod:`aicr_pytest.testing.players.snapshot_agent`);
* the CNCF SHOULD checks (``--cncf-should``): ``driver-version-skew`` -- the last GPU node in name
  order runs GPU driver 570.172.08 (GFD labels); ``runtime-version-skew`` -- it runs
  ``containerd://1.6.36``; ``no-rdma-resources`` -- no node advertises ``vpc.amazonaws.com/efa``
  (or another RDMA NIC resource); ``sandbox-kernel-shared`` -- a ``gvisor`` RuntimeClass (handler
  ``runsc``) whose probe pods print the node's own kernel (:mod:`aicr_pytest.testing.players.sandbox`).
  No profile exposes GPU sharing (MIG, time-slicing or DRA partitions), so ``gpu-sharing`` fails on
  every profile and needs no fault; no profile has a sandboxed RuntimeClass, so
  ``workload-sandboxing`` skips.
* gang-scheduling with Kueue: ``kueue-gang`` -- Kueue instead of KAI (its CRDs and quota admission,
  :mod:`aicr_pytest.testing.players.kueue`); ``gang-partial-admission`` -- that Kueue admits a gang
  Job beyond its ClusterQueue's quota, so part of the gang is scheduled.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

# The built-in players (nvidia-smi, NCCL, inference) register on import: AICR's profiles come with them.
import aicr_pytest.testing.players  # noqa: F401
from aicr_pytest.testing.builders import crd, daemonset, deployment
from aicr_pytest.testing.model import ClusterProfile, Component
from aicr_pytest.testing.profiles.eks import (
    gb200_eks_training,
    gb200_eks_training_slurm,
    gb300_eks_roce_training,
    h100_eks_inference,
    h100_eks_inference_gateway,
    h100_eks_training,
    h100_eks_training_cre,
    h100_eks_training_dra,
    h100_eks_training_karpenter,
)
from aicr_pytest.testing.profiles.faults import FAULTS, apply_fault
from aicr_pytest.testing.profiles.gke import h100_gke_training

__all__ = [
    "FAULTS",
    "PROFILES",
    "ClusterProfile",
    "Component",
    "apply_fault",
    "crd",
    "daemonset",
    "deployment",
    "gb200_eks_training",
    "gb200_eks_training_slurm",
    "gb300_eks_roce_training",
    "h100_eks_inference",
    "h100_eks_inference_gateway",
    "h100_eks_training",
    "h100_eks_training_cre",
    "h100_eks_training_dra",
    "h100_eks_training_karpenter",
    "h100_gke_training",
    "resolve_profile",
]

PROFILES: dict[str, Callable[[], ClusterProfile]] = {
    "h100-eks-training": h100_eks_training,
    "h100-eks-training-dra": h100_eks_training_dra,
    "gb200-eks-training": gb200_eks_training,
    "h100-eks-inference": h100_eks_inference,
    "h100-gke-training": h100_gke_training,
    "gb300-eks-roce-training": gb300_eks_roce_training,
    "h100-eks-training-karpenter": h100_eks_training_karpenter,
    "h100-eks-inference-gateway": h100_eks_inference_gateway,
    "gb200-eks-training-slurm": gb200_eks_training_slurm,
    "h100-eks-training-cre": h100_eks_training_cre,
}


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
