"""GPU simulators: nodes whose GPUs a mock stands in for, told by what the simulator leaves on the cluster.

A pod that ran to completion on such a node, with a real image id, proves nothing about a GPU: its
``nvidia-smi`` and NVML calls answered from a mock. Two simulators are known, each recognised by what
its own deployment manifests put on the node and its pods (read from the simulators' repositories):

* **NVIDIA's NVML mock** (``NVIDIA/k8s-test-infra``, Helm chart ``deployments/nvml-mock``, formerly
  ``deployments/gpu-mock``): a privileged DaemonSet whose image repository is ``…/nvml-mock``
  (``ghcr.io/nvidia/nvml-mock``; formerly ``…/gpu-mock``) and which mounts the host path
  ``/var/lib/nvml-mock`` (formerly ``/var/lib/nvidia-mock``) to install the mock ``libnvidia-ml.so``,
  device nodes and CDI spec. Device plugins and DRA drivers it feeds mount the same path as their
  driver root. It labels the node only ``nvidia.com/gpu.present=true`` (no tell).
* **Run:ai's fake-gpu-operator** (``run-ai/fake-gpu-operator``): it manages the nodes labelled
  ``run.ai/simulated-gpu-node-pool=<pool>`` (its default node-pool label key) and runs its own
  ``device-plugin``/``status-exporter`` images (``…/fake-gpu-operator/<component>``, e.g.
  ``ghcr.io/run-ai/fake-gpu-operator/device-plugin``) on them.

:func:`detect_simulator` is pure: the node and the pods bound to it in, the simulator and its evidence
out. KWOK (no containers run at all) is :func:`aicr_pytest.kube.proof.is_fake_node`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

NVML_MOCK: Final = "NVIDIA's NVML mock"
FAKE_GPU_OPERATOR: Final = "Run:ai's fake-gpu-operator"

FGO_POOL_LABEL: Final = "run.ai/simulated-gpu-node-pool"
FGO_IMAGE_PATH: Final = "/fake-gpu-operator/"
NVML_MOCK_REPOSITORIES: Final = frozenset({"nvml-mock", "gpu-mock"})
NVML_MOCK_HOST_PATHS: Final = ("/var/lib/nvml-mock", "/var/lib/nvidia-mock")

EVIDENCE_LABEL: Final = "node label {key}={value}"
EVIDENCE_IMAGE: Final = "pod {pod} runs image {image}"
EVIDENCE_HOST_PATH: Final = "pod {pod} mounts host path {path}"


@dataclass(frozen=True)
class Simulated:
    """The simulator that stands in for a node's GPUs, and what gave it away."""

    simulator: str
    evidence: str


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def repository_name(image: str) -> str:
    """The last path component of an image reference, without tag or digest
    (``ghcr.io/nvidia/nvml-mock:v0.1.0`` → ``nvml-mock``)."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def _images(spec: Mapping[str, Any]) -> list[str]:
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return [str(_map(c).get("image") or "") for c in containers if _map(c).get("image")]


def _host_paths(spec: Mapping[str, Any]) -> list[str]:
    paths = []
    for volume in spec.get("volumes") or []:
        path = _map(_map(volume).get("hostPath")).get("path")
        if isinstance(path, str):
            paths.append(path.rstrip("/"))
    return paths


def _pod_simulator(pod: Mapping[str, Any]) -> Simulated | None:
    meta, spec = _map(pod.get("metadata")), _map(pod.get("spec"))
    ref = f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}"
    for image in _images(spec):
        if repository_name(image) in NVML_MOCK_REPOSITORIES:
            return Simulated(NVML_MOCK, EVIDENCE_IMAGE.format(pod=ref, image=image))
        if FGO_IMAGE_PATH in image:
            return Simulated(FAKE_GPU_OPERATOR, EVIDENCE_IMAGE.format(pod=ref, image=image))
    for path in _host_paths(spec):
        if any(path == p or path.startswith(p + "/") for p in NVML_MOCK_HOST_PATHS):
            return Simulated(NVML_MOCK, EVIDENCE_HOST_PATH.format(pod=ref, path=path))
    return None


def detect_simulator(node: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]]) -> Simulated | None:
    """The GPU simulator behind ``node`` (``pods``: the pods bound to it), or ``None``.

    The node's own label is read first; then the pods, in name order so the evidence is stable."""
    labels = _map(_map((node or {}).get("metadata")).get("labels"))
    if FGO_POOL_LABEL in labels:
        return Simulated(
            FAKE_GPU_OPERATOR, EVIDENCE_LABEL.format(key=FGO_POOL_LABEL, value=labels[FGO_POOL_LABEL])
        )

    def key(pod: Mapping[str, Any]) -> tuple[str, str]:
        meta = _map(pod.get("metadata"))
        return str(meta.get("namespace") or ""), str(meta.get("name") or "")

    for pod in sorted(pods, key=key):
        found = _pod_simulator(pod)
        if found is not None:
            return found
    return None


__all__ = [
    "FAKE_GPU_OPERATOR",
    "FGO_POOL_LABEL",
    "NVML_MOCK",
    "NVML_MOCK_HOST_PATHS",
    "Simulated",
    "detect_simulator",
    "repository_name",
]
