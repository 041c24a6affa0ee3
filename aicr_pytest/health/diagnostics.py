"""``gpu-diagnostics``, the pure half: the per-node pod and what its end means.

One run-scoped Pod per targeted GPU node (pinned with ``nodeName``, holding every allocatable
``nvidia.com/gpu`` of the node) runs ``dcgmi diag -r LEVEL -j`` from a DCGM image (a knob, for
air-gapped clusters): the container starts a local host engine, then the diag.  The log is the
diag's JSON document, judged by :func:`aicr_pytest.health.dcgm.check_diagnostics`.

How a pod ends, per node (:func:`pod_outcome_line`): a pod that never started within the level's
budget, one whose image never pulls, one that vanished or printed no document is inconclusive
naming the node — never a pass.  ``dcgmi diag`` exits non-zero when a test fails, so a pod that
ended ``Failed`` with a document in its log is judged on the document.

DRA-only GPU nodes (no ``nvidia.com/gpu`` allocatable) are not diagnosed: the pod holds GPUs through
the device plugin only; such a node is an inconclusive line, not a silent pass.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

from aicr_pytest.core import defaults
from aicr_pytest.health.dcgm import DiagLevel, diag_command

DEFAULT_DCGM_IMAGE: Final = defaults.DEFAULT_DCGM_IMAGE
GPU_RESOURCE: Final = "nvidia.com/gpu"
APP_LABEL: Final = ("app.kubernetes.io/name", "aicr-dcgm-diag")
NODE_ANNOTATION: Final = "aicr-pytest.nvidia.com/node"
CONTAINER: Final = "dcgm-diag"
POD_BASE: Final = "dcgm-diag"
#: reasons a container waits with that mean its image will not be pulled
PULL_FAILURES: Final = frozenset({"ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"})

MSG_NOT_STARTED: Final = "node {node}: the DCGM diagnostic pod {pod} never ran within {budget:.0f}s ({state})"
MSG_IMAGE_PULL: Final = "node {node}: the DCGM image {image} cannot be pulled for pod {pod} ({reason}: {why})"
MSG_VANISHED: Final = "node {node}: the DCGM diagnostic pod {pod} vanished before it finished"
MSG_CREATE_FAILED: Final = "node {node}: could not create the DCGM diagnostic pod: {err}"
MSG_NO_LOG: Final = "node {node}: the DCGM diagnostic pod {pod} printed no log ({why})"
MSG_DRA_ONLY: Final = (
    "node {node}: DRA-only GPU node (no nvidia.com/gpu allocatable); gpu-diagnostics holds GPUs "
    "through the device plugin only"
)
MSG_NO_GPUS: Final = "node {node}: no allocatable GPU to diagnose"


def pod_base(node: str) -> str:
    """The pod's base name for ``node`` (the run scope adds the run suffix): DNS-1123, short, unique."""
    digest = hashlib.sha256(node.encode()).hexdigest()[:6]
    clean = "".join(c if c.isalnum() else "-" for c in node.lower()).strip("-")[:20].rstrip("-")
    return f"{POD_BASE}-{clean}-{digest}" if clean else f"{POD_BASE}-{digest}"


def diag_script(level: DiagLevel) -> str:
    """Start a host engine in the container, then run the diag (its JSON is the container's log)."""
    return "nv-hostengine >/dev/null 2>&1 || true\nexec " + shlex.join(diag_command(level))


def diag_pod(
    node: str,
    gpus: int,
    *,
    name: str,
    image: str,
    level: DiagLevel,
    tolerations: Sequence[Mapping[str, Any]] | None,
    active_deadline_seconds: int,
) -> dict[str, Any]:
    """The diagnostics Pod for ``node`` holding its ``gpus`` GPUs (``tolerations=None``: tolerate all)."""
    count = str(gpus)
    container = {
        "name": CONTAINER,
        "image": image,
        "command": ["/bin/sh", "-c"],
        "args": [diag_script(level)],
        "resources": {"limits": {GPU_RESOURCE: count}, "requests": {GPU_RESOURCE: count}},
        # DCGM's diagnostic plugins read GPU state that needs SYS_ADMIN
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {APP_LABEL[0]: APP_LABEL[1]},
            "annotations": {NODE_ANNOTATION: node},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeName": node,
            "activeDeadlineSeconds": active_deadline_seconds,
            "containers": [container],
            "tolerations": [dict(t) for t in tolerations]
            if tolerations is not None
            else [{"operator": "Exists"}],
        },
    }


def pull_failure(pod: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(reason, message)`` when a container of ``pod`` waits on an image that will not be pulled."""
    for st in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        waiting = (st.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in PULL_FAILURES:
            return str(waiting["reason"]), " ".join(str(waiting.get("message") or "no message").split())
    return None


__all__ = [
    "APP_LABEL",
    "CONTAINER",
    "DEFAULT_DCGM_IMAGE",
    "MSG_CREATE_FAILED",
    "MSG_DRA_ONLY",
    "MSG_IMAGE_PULL",
    "MSG_NOT_STARTED",
    "MSG_NO_GPUS",
    "MSG_NO_LOG",
    "MSG_VANISHED",
    "NODE_ANNOTATION",
    "diag_pod",
    "diag_script",
    "pod_base",
    "pull_failure",
]
