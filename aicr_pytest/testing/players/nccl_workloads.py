"""What the NCCL player's operators create, as shapes: Kubeflow Trainer, JobSet and the DRA driver.

Object builders and status shapes shared by the fake's NCCL player (:mod:`.nccl`) and the repository's
control-plane test controllers, so both play JobSet, Trainer and ComputeDomains the same way; and the
transport probes (what a worker really got: the TCPXO sidecar and NICs, RoCE devices).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aicr_pytest.testing.builders import GKE_GPU_NICS, ROCE_DEVICE_CLASS, ROCE_DRIVER, TCPXO_INSTALLER
from aicr_pytest.testing.simulator import Simulator
from aicr_pytest.testing.store import Obj, clone

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
TRAINJOB_NAME_LABEL = "trainer.kubeflow.org/trainjob-name"
LAUNCHER = "launcher"
NODE = "node"

TCPXO_HOST_DIR = "/home/kubernetes/bin/nvidia"
TCPXO_SIDECAR = "tcpxo-daemon"
GKE_INTERFACES_ANNOTATION = "networking.gke.io/interfaces"


def dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def owner_ref(obj: Obj) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def condition(ctype: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": ctype,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }


def trainer_webhook_denial(body: bytes) -> str:
    """What Kubeflow Trainer's validating webhook answers while its informer cache has not seen the
    TrainJob's runtime yet (AICR #1670): the runtime named in the request's ``spec.runtimeRef``."""
    try:
        ref = dig(json.loads(body or b"{}"), "spec", "runtimeRef") or {}
    except ValueError:
        ref = {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    plural = "trainingruntimes" if kind == "TrainingRuntime" else "clustertrainingruntimes"
    name = str(ref.get("name") or "")
    return (
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
        f"spec.runtimeRef: Invalid value: {json.dumps(ref, separators=(',', ':'))}: "
        f'{plural}.trainer.kubeflow.org "{name}" not found: '
        f"specified {kind[0].lower() + kind[1:]} must be created before the TrainJob is created"
    )


def node_of(pod: Obj) -> str:
    return str(dig(pod, "spec", "nodeName") or "")


def is_tcpxo_probe(pod: Obj) -> bool:
    """A pod that mounts the host's TCPXO directory and tests for ``nccl-env-profile.sh``."""
    spec = pod.get("spec") or {}
    mounts = any(
        dig(v, "hostPath", "path") == TCPXO_HOST_DIR for v in spec.get("volumes") or [] if isinstance(v, dict)
    )
    script = " ".join(
        str(w) for c in spec.get("containers") or [] for w in (c.get("command") or []) + (c.get("args") or [])
    )
    return mounts and spec.get("restartPolicy") == "Never" and "nccl-env-profile.sh" in script


def tcpxo_plugin_on(sim: Simulator, node: str) -> bool:
    """The TCPXO NCCL plugin installer runs (Running pod) on ``node``."""
    return any(
        dig(p, "spec", "nodeName") == node and dig(p, "status", "phase") == "Running"
        for p in sim.store.iter_objects(sim.rt("v1", "Pod"), "kube-system")
        if (p["metadata"].get("labels") or {}).get("app") == TCPXO_INSTALLER
    )


def tcpxo_ready(sim: Simulator, pod: Obj) -> bool:
    """A worker FasTrak can use: the ``tcpxo-daemon`` sidecar, eth0 + 8 GPU NICs, the host plugin."""
    spec = pod.get("spec") or {}
    sidecar = any(c.get("name") == TCPXO_SIDECAR for c in spec.get("initContainers") or [])
    try:
        nics = json.loads((pod["metadata"].get("annotations") or {}).get(GKE_INTERFACES_ANNOTATION) or "[]")
    except ValueError:
        nics = []
    return sidecar and len(nics) >= GKE_GPU_NICS + 1 and tcpxo_plugin_on(sim, node_of(pod))


def roce_devices(sim: Simulator, pod: Obj) -> int:
    """RoCE NICs the worker gets: what its claim templates ask of :data:`ROCE_DEVICE_CLASS`, when the
    templates exist and its node publishes that many devices (0 otherwise)."""
    ns = pod["metadata"].get("namespace", "default")
    wanted = 0
    for claim in dig(pod, "spec", "resourceClaims") or []:
        name = claim.get("resourceClaimTemplateName")
        if not name:
            continue
        rct = sim.store.peek(sim.rt("resource.k8s.io/v1", "ResourceClaimTemplate"), ns, str(name))
        for req in dig(rct, "spec", "spec", "devices", "requests") or []:
            exact = req.get("exactly") or {}
            if exact.get("deviceClassName") == ROCE_DEVICE_CLASS:
                wanted += int(exact.get("count") or 1)
    published = sum(
        len(dig(s, "spec", "devices") or [])
        for s in sim.store.iter_objects(sim.rt("resource.k8s.io/v1", "ResourceSlice"))
        if dig(s, "spec", "driver") == ROCE_DRIVER and dig(s, "spec", "nodeName") == node_of(pod)
    )
    return wanted if 0 < wanted <= published else 0


def replicated_job(
    jobset: Obj,
    rj: Obj,
    num_nodes: int,
    labels: Mapping[str, str],
    *,
    suspend: bool,
    owner: Obj,
    pod_annotations: Mapping[str, str] | None = None,
) -> Obj:
    """The Indexed ``batch/v1`` Job a JobSet controller creates for replicated job ``rj``.

    Shared by the fake's Trainer player and the control-plane test controller, so both play
    JobSet the same way (names, labels the check waits on, parallelism).
    """
    ns, jsname = jobset["metadata"]["namespace"], jobset["metadata"]["name"]
    rname = str(rj.get("name"))
    job_spec = clone(dig(rj, "template", "spec") or {})
    pod_template = job_spec.get("template") or {}
    count = num_nodes if rname == NODE else int(job_spec.get("parallelism") or 1)
    js_labels = {
        JOBSET_NAME_LABEL: jsname,
        REPLICATED_JOB_LABEL: rname,
        REPLICATED_JOB_REPLICAS_LABEL: str(rj.get("replicas") or 1),
        JOB_INDEX_LABEL: "0",
        TRAINJOB_NAME_LABEL: jsname,
    }
    pmeta = pod_template.setdefault("metadata", {})
    pmeta["labels"] = {**(pmeta.get("labels") or {}), **js_labels}
    if pod_annotations:
        pmeta["annotations"] = {**(pmeta.get("annotations") or {}), **pod_annotations}
    pspec = pod_template.setdefault("spec", {})
    pspec.setdefault("restartPolicy", "OnFailure")
    pspec.setdefault("subdomain", jsname)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{jsname}-{rname}-0",
            "namespace": ns,
            "labels": {**labels, **js_labels},
            "ownerReferences": [owner],
        },
        "spec": {
            **{k: v for k, v in job_spec.items() if k != "template"},
            "completionMode": "Indexed",
            "completions": count,
            "parallelism": count,
            "backoffLimit": 0,
            "suspend": suspend,
            "template": pod_template,
        },
    }


#: The IMEX channel DeviceClass the NVIDIA DRA driver installs (what a ComputeDomain's claims ask for).
IMEX_CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
#: Label the DRA driver puts on what it makes for a ComputeDomain (value: the ComputeDomain's uid).
COMPUTE_DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
#: The ComputeDomain ``status`` the DRA driver writes once the domain is usable.
COMPUTE_DOMAIN_READY: Obj = {"status": "Ready"}


def imex_claim_template(cd: Obj, owner: Obj) -> Obj | None:
    """The IMEX channel ``ResourceClaimTemplate`` the DRA driver makes for ComputeDomain ``cd``.

    Named by ``spec.channel.resourceClaimTemplate.name``, in the ComputeDomain's namespace, with its
    labels plus :data:`COMPUTE_DOMAIN_LABEL`, owned by ``owner``; ``None`` when ``cd`` names none.
    Shared by the fake's player and the control-plane test controller.
    """
    meta = cd["metadata"]
    name = dig(cd, "spec", "channel", "resourceClaimTemplate", "name")
    if not name:
        return None
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": str(name),
            "namespace": meta.get("namespace", "default"),
            "labels": {**(meta.get("labels") or {}), COMPUTE_DOMAIN_LABEL: str(meta["uid"])},
            "ownerReferences": [owner],
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "channel",
                            "exactly": {
                                "deviceClassName": IMEX_CHANNEL_CLASS,
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                        }
                    ]
                }
            }
        },
    }


def jobset_terminal_status(ok: bool, now: str) -> Obj:
    """The ``status`` a JobSet controller writes when the set completes (``ok``) or fails."""
    state = "Completed" if ok else "Failed"
    message = "jobset completed successfully" if ok else "jobset failed due to one or more job failures"
    return {
        "terminalState": state,
        "conditions": [condition(state, "AllJobsCompleted" if ok else "FailedJobs", message, now)],
    }


def trainjob_terminal_status(ok: bool, now: str) -> Obj:
    """The ``status`` Kubeflow Trainer writes on a TrainJob whose JobSet finished."""
    return {
        "conditions": [
            condition("Created", "JobsCreated", "TrainJob Jobs are created", now),
            condition(
                "Complete" if ok else "Failed",
                "JobSetCompleted" if ok else "JobSetFailed",
                "TrainJob is completed" if ok else "TrainJob has failed",
                now,
            ),
        ]
    }


def job_outcome(job: Obj) -> str | None:
    for cond in dig(job, "status", "conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None
