"""What ``aicr-pytest simulate --list`` says about each profile and fault, in a user's terms.

A profile or fault without an entry here is described by its docstring's first sentence (markup and
module references removed); the entries below cover those whose docstring speaks to developers (which
player honours a recorded fault) rather than to someone choosing a scenario to try.
"""

from __future__ import annotations

import re
from typing import Final

PROFILES: Final[dict[str, str]] = {
    "h100-eks-training": (
        "H100 training on EKS: 4 GPU nodes (8x H100 80GB each, EFA) and a system node, with the GPU "
        "Operator, the NVIDIA DRA driver, KAI scheduler, Kubeflow Trainer and the Prometheus stack."
    ),
    "h100-eks-inference": (
        "H100 inference on EKS: the training stack plus Dynamo serving a model (frontend and decode "
        "worker), for inference-perf and the inference conformance checks."
    ),
}

FAULTS: Final[dict[str, str]] = {
    "imex-channel-missing": (
        "Multi-node NVLink: the DRA driver turns a ComputeDomain into its claim template, but the pod "
        "claiming a channel sees no IMEX channel device."
    ),
    "gvnic-displaces-gpu-nic": (
        "GKE: a gVNIC additional network takes a GPU NIC's PCI slot on the last GPU node (7 of 8 GPU "
        "NICs left)."
    ),
    "nccl-bandwidth-regression": (
        "NCCL bus bandwidth 30 % below the profile's healthy value, still above the example recipe's "
        "floor: a baseline comparison catches it, the floor does not."
    ),
    "nvml-mock": (
        "The GPUs are NVIDIA's NVML mock: pods really run, but nvidia-smi answers from a mock on every "
        "GPU node."
    ),
    "rdma-not-ready": (
        "The RDMA fabric is still rolling out: the last GPU node does not advertise the RDMA resource "
        "its peers do."
    ),
    "driver-below-floor": (
        "The last GPU node runs an R535 host driver, below a recipe's Deployment.gpu-driver.version floor."
    ),
    "driver-r595": (
        "The last GPU node runs an R595 driver, which removed NVreg_GrdmaPciTopoCheckOverride: the NCCL "
        "NET check's Grace-Blackwell preflight cannot verify GPUDirect RDMA there and fails."
    ),
    "prometheus-down": "Prometheus has no ready endpoint: every metrics query answers 503.",
    "dcgm-exporter-no-gpu-series": "The DCGM exporter runs but exports no per-GPU series.",
    "slurm-controller-down": (
        "slurmctld does not answer: scontrol ping reports DOWN and srun cannot allocate."
    ),
    "imex-channels-shared": "Two Slurm IMEX jobs see the same IMEX channel (no isolation between jobs).",
    "cre-bandwidth-low": "NVCRE's bandwidth measurement reports a low peak bus bandwidth (120.5 GB/s).",
    "cre-goodput-low": "NVCRE's goodput measurement reports a low goodput ratio (0.41).",
    "cre-certification-failed": (
        "The NVCRE Certification ends Failed (ThresholdsNotMet) without measurements."
    ),
    "cre-certification-stuck": "The NVCRE Certification never leaves InProgress.",
    "cre-measurement-unparsable": "NVCRE's measurements hold n/a where numbers belong.",
    "inference-low-throughput": (
        "The served model answers, but AIPerf measures a fifth of healthy throughput."
    ),
    "inference-endpoint-down": "The inference endpoint does not answer: AIPerf cannot measure anything.",
    "nccl-low-bandwidth": "NCCL all-reduce reaches about a quarter of healthy bus bandwidth.",
    "nccl-socket-fallback": (
        "NCCL falls back to TCP sockets (its network plugin did not load) while the bandwidth looks healthy."
    ),
    "nccl-launcher-never-starts": "The NCCL benchmark's launcher pod stays Pending (ImagePullBackOff).",
    "nccl-launcher-log-rotated": (
        "The NCCL launcher's log lost its results table (rotated out); only its termination message has it."
    ),
    "trainer-webhook-cache-lag": (
        "Kubeflow Trainer's webhook denies the first 3 TrainJob creates (cache race)."
    ),
    "trainer-webhook-never-admits": "Kubeflow Trainer's webhook denies every TrainJob create.",
    "snapshot-agent-log-truncated": (
        "The snapshot agent's log is cut off in the middle of its sysctl section."
    ),
    "kai-forbidden": "KAI is installed, but the validator is refused (403) its CRDs and queues.",
    "kai-gang-split": "KAI binds the second gang worker 45 s after the first (not co-scheduled).",
    "kai-queue-missing": "KAI runs without its default queue.",
    "trainer-webhook-admits": "Kubeflow Trainer's webhook admits an invalid TrainJob.",
    "trainer-schema-rejects": (
        "An invalid TrainJob is refused by a schema check (422), not by Trainer's webhook."
    ),
    "gpu-isolation-broken": "A container that asked for no GPU sees the node's GPUs.",
    "gpu-visible-without-allocation": "A pod without a GPU allocation sees the /dev/nvidia* device nodes.",
    "gpu-test-image-pull": "The CUDA test image cannot be pulled (ImagePullBackOff).",
    "clusterpolicy-not-ready": "The GPU Operator's ClusterPolicy reports notReady.",
    "hpa-never-scales": (
        "The HPA controller cannot read its metric (FailedGetExternalMetric) and never scales."
    ),
    "dra-gpu-slices-missing": (
        "The DRA driver publishes ComputeDomain slices only: no whole GPUs through DRA "
        "(a policy mismatch with a dra-resource-claim recipe)."
    ),
    "roce-driver-missing": (
        "No RoCE DRA driver: no RoCE DeviceClass or ResourceSlices, so RoCE NICs cannot be claimed."
    ),
    "sandbox-kernel-shared": "A gVisor RuntimeClass whose pods nevertheless run on the node's own kernel.",
    "slurm-gpu-isolation-broken": (
        "A Slurm job without a GPU request opens every GPU device node and nvidia-smi lists every GPU."
    ),
    "tcpxo-plugin-missing": "GKE's TCPXO NCCL plugin installer has not reached the last GPU node.",
}

_MODULE_REF = re.compile(r"\s*\(?:(?:mod|func|class|data):`[^`]*`[^)]*\)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


def from_docstring(doc: str | None) -> str:
    """A docstring's first sentence as plain text: its first paragraph on one line, Sphinx roles
    and double backquotes removed."""
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    text = " ".join(line.strip() for line in paragraph.splitlines())
    text = _MODULE_REF.sub("", text).replace("``", "")
    return _SENTENCE_END.split(text, 1)[0].strip()


def describe_profile(name: str, doc: str | None) -> str:
    return PROFILES.get(name) or from_docstring(doc)


def describe_fault(name: str, doc: str | None) -> str:
    return FAULTS.get(name) or from_docstring(doc)


__all__ = ["FAULTS", "PROFILES", "describe_fault", "describe_profile", "from_docstring"]
