"""The snapshot agent: a run-scoped Job on one GPU node running :file:`collect.sh` in a stock image.

Pure manifests and decisions; :mod:`.cluster` creates them through :class:`~aicr_pytest.kube.RunScope`
(run-scoped names and labels, deleted on success, failure, timeout and Ctrl-C).

* **Image**: any image with a POSIX ``/bin/sh`` and ``find``; the default is the CUDA base image
  ``check-nvidia-smi`` uses (``--image``, else ``AICR_NVIDIA_SMI_IMAGE``), so an air-gapped cluster
  that mirrors it for that check has it for the snapshot too. Nothing of ours is in the image: the
  collector script comes in a ConfigMap, and the pod mounts no service-account token (it never
  talks to the API).
* **Placement** (AICR's source node): ``--node-selector`` when given; otherwise, if any node is
  labelled ``nvidia.com/gpu.present=true``, that label; otherwise the scheduler's choice.
  Tolerations: ``--toleration`` when given, else every taint is tolerated. ``--require-gpu`` also
  asks for one ``nvidia.com/gpu`` (the pod then lands on a node advertising GPUs).
* **Privileged** (default, as AICR): host PID/IPC/network namespaces, a privileged root container,
  and the host's ``/etc/os-release`` mounted read-only at ``/host/etc/os-release``. It reads the
  host's kernel command line, modules, sysctls (the host's IPC/UTS/network values too), PCI devices,
  ``nvidia-smi -q -x`` and ``systemctl show`` (both run in the host's mount namespace through
  ``nsenter``). **Unprivileged** (``--privileged=false``, fits a PSS ``restricted`` namespace):
  non-root, no capabilities, read-only root, RuntimeDefault seccomp, no host namespaces or host
  paths. It still reads ``/proc/cmdline``, ``/proc/modules``, the sysctls that are not namespaced
  (namespaced ones show the pod's own values) and ``/sys/bus/pci``; ``nvidia-smi`` only when a GPU is
  allocated (``--require-gpu``, and it then sees that GPU only); it has no ``OS.release`` and no
  ``SystemD``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, Final

from aicr_pytest.core.settings import Toleration

JSON = dict[str, Any]

APP_LABEL: Final = ("app.kubernetes.io/name", "aicr-pytest-snapshot-agent")
JOB_BASE: Final = "aicr-snapshot"
CONFIGMAP_BASE: Final = "aicr-snapshot-agent"
CONTAINER: Final = "collector"
SCRIPT_KEY: Final = "collect.sh"
SCRIPT_DIR: Final = "/aicr-snapshot"
HOST_OS_RELEASE: Final = "/host/etc/os-release"
GPU_PRESENT_LABEL: Final = "nvidia.com/gpu.present"
GPU_RESOURCE: Final = "nvidia.com/gpu"
#: Kept after the Job ends if cleanup could not run (kubectl delete of the client, a crash).
TTL_AFTER_FINISHED_S: Final = 3600
UNPRIVILEGED_UID: Final = 65534
#: The agent container's resources unless ``--requests``/``--limits`` replace a key.
DEFAULT_REQUESTS: Final[Mapping[str, str]] = {"cpu": "100m", "memory": "64Mi"}
DEFAULT_LIMITS: Final[Mapping[str, str]] = {"cpu": "1", "memory": "256Mi"}


def collector_script() -> str:
    """The POSIX shell collector the agent runs (``aicr_pytest/snapshot/collect.sh``)."""
    return resources.files("aicr_pytest.snapshot").joinpath("collect.sh").read_text(encoding="utf-8")


def auto_node_selector(nodes: Iterable[Mapping[str, Any]]) -> dict[str, str] | None:
    """``{nvidia.com/gpu.present: "true"}`` when any node carries that label, else ``None``."""
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(GPU_PRESENT_LABEL) == "true":
            return {GPU_PRESENT_LABEL: "true"}
    return None


def script_configmap(name: str, script: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {APP_LABEL[0]: APP_LABEL[1]}},
        "data": {SCRIPT_KEY: script},
    }


def _tolerations(tolerations: Sequence[Toleration] | None) -> list[JSON]:
    if tolerations is None:
        return [{"operator": "Exists"}]
    return [t.to_k8s() for t in tolerations]


def agent_resources(
    *,
    require_gpu: bool,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
) -> JSON:
    """The container's ``resources``: the defaults, each key ``--requests``/``--limits`` names
    replaced; with ``--require-gpu``, ``nvidia.com/gpu: 1`` unless ``--limits`` names that key."""
    req = {**DEFAULT_REQUESTS, **(requests or {})}
    lim = {**DEFAULT_LIMITS, **(limits or {})}
    if require_gpu and GPU_RESOURCE not in lim:
        lim[GPU_RESOURCE] = "1"
    return {"requests": req, "limits": lim}


def agent_job(
    name: str,
    *,
    configmap: str,
    image: str,
    privileged: bool,
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Toleration] | None,
    require_gpu: bool,
    active_deadline_seconds: int,
    runtime_class: str | None = None,
    service_account: str | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
) -> JSON:
    """The agent Job (one pod, never retried); see the module docstring for what each mode mounts.

    ``runtime_class`` (``--runtime-class``) sets the pod's ``runtimeClassName``; ``service_account``
    (``--service-account-name``) its ``serviceAccountName`` (an existing account: the agent creates
    none, and still mounts no token); ``requests``/``limits`` override the defaults per key."""
    env: list[JSON] = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "AICR_PRIVILEGED", "value": "true" if privileged else "false"},
    ]
    mounts: list[JSON] = [{"name": "collector", "mountPath": SCRIPT_DIR, "readOnly": True}]
    volumes: list[JSON] = [
        {"name": "collector", "configMap": {"name": configmap, "defaultMode": 0o444}},
    ]
    pod: JSON = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "tolerations": _tolerations(tolerations),
        "terminationGracePeriodSeconds": 5,
    }
    if runtime_class:
        pod["runtimeClassName"] = runtime_class
    if service_account:
        pod["serviceAccountName"] = service_account
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    container: JSON = {
        "name": CONTAINER,
        "image": image,
        "command": ["/bin/sh", f"{SCRIPT_DIR}/{SCRIPT_KEY}"],
        "env": env,
        "resources": agent_resources(require_gpu=require_gpu, requests=requests, limits=limits),
        "volumeMounts": mounts,
    }
    if privileged:
        pod.update({"hostPID": True, "hostIPC": True, "hostNetwork": True})
        pod["securityContext"] = {"runAsUser": 0, "runAsGroup": 0}
        container["securityContext"] = {"privileged": True, "runAsUser": 0, "allowPrivilegeEscalation": True}
        mounts.append({"name": "host-os-release", "mountPath": HOST_OS_RELEASE, "readOnly": True})
        volumes.append({"name": "host-os-release", "hostPath": {"path": "/etc/os-release", "type": "File"}})
    else:
        pod["securityContext"] = {
            "runAsNonRoot": True,
            "runAsUser": UNPRIVILEGED_UID,
            "runAsGroup": UNPRIVILEGED_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        container["securityContext"] = {
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        }
    pod["containers"] = [container]
    pod["volumes"] = volumes
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {APP_LABEL[0]: APP_LABEL[1]}},
        "spec": {
            "backoffLimit": 0,
            "completions": 1,
            "parallelism": 1,
            "activeDeadlineSeconds": max(1, int(active_deadline_seconds)),
            "ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S,
            "template": {"metadata": {"labels": {APP_LABEL[0]: APP_LABEL[1]}}, "spec": pod},
        },
    }


__all__ = [
    "APP_LABEL",
    "CONFIGMAP_BASE",
    "CONTAINER",
    "DEFAULT_LIMITS",
    "DEFAULT_REQUESTS",
    "GPU_PRESENT_LABEL",
    "JOB_BASE",
    "agent_job",
    "agent_resources",
    "auto_node_selector",
    "collector_script",
    "script_configmap",
]
