"""Simulator player for the NCCL all-reduce checks: Kubeflow Trainer, JobSet and ``all_reduce_perf``.

What it plays, on the fake cluster's clock:

* **Kubeflow Trainer** — on ``TrainJob`` create: resolve ``spec.runtimeRef`` (a namespaced
  ``TrainingRuntime`` or a ``ClusterTrainingRuntime``), create the ``JobSet`` of the same name
  (owned by the TrainJob) and set the TrainJob's ``Created`` condition.
* **JobSet** — one ``batch/v1`` Job per replicatedJob (``<jobset>-<rjob>-0``, Indexed, owned by the
  JobSet, backoffLimit 0); pod templates get the JobSet labels
  (``jobset.sigs.k8s.io/jobset-name``, ``…/replicatedjob-name``, ``…/job-index``) and
  ``trainer.kubeflow.org/trainjob-name``.  The ``node`` Job runs ``numNodes`` workers; the launcher
  Job starts only once every worker is Ready (Trainer's MPI runtime makes the launcher depend on the
  node job).  The simulator's Job controller, scheduler and kubelet do the rest, so workers really
  need ``nvidia.com/gpu`` (and EFA) on the nodes.  When the launcher Job completes, the JobSet and
  the TrainJob are marked Complete and the worker Job is deleted (its pods go with it); when it
  fails they are marked Failed.  Deleting the TrainJob garbage-collects everything via
  ownerReferences.
* **Workers** — ``sshd -D -e``: Running until deleted.
* **Launcher** — a realistic ``all_reduce_perf`` launcher log (ssh warnings, the nccl-tests header,
  the device list, NCCL INFO lines when the runtime sets ``NCCL_DEBUG=INFO``, the results table
  written row by row, the trailer) for the sweep the runtime asks for (``-b``/``-e``/``-f``), the
  ranks it runs (workers × ``numProcPerNode``) and the GPUs the workers landed on.  Bus bandwidth
  follows a latency + bandwidth model with a per-GPU/variant peak (H100 ≈ 450 GB/s at 16G).
* **NVIDIA DRA driver (ComputeDomain)** — on ``ComputeDomain`` create: the ``ResourceClaimTemplate``
  named in ``spec.channel.resourceClaimTemplate.name`` (owned by the ComputeDomain;
  :func:`imex_claim_template`, shared with the control plane's
  :mod:`~tests.harness.controlplane_computedomain`) and ``status: Ready``.

* **Transports** — what NCCL would pick given the runtime's env *and* what the workers really got:
  AWS Libfabric (EFA env), ``FasTrak`` (GKE GPUDirect-TCPXO: ``NCCL_FASTRAK_*`` env, and only when
  every worker has the ``tcpxo-daemon`` sidecar, eth0 plus 8 GPU NICs in its
  ``networking.gke.io/interfaces`` annotation and a node where the TCPXO NCCL plugin installer
  runs; H100 ≈ 340 GB/s as measured on a3-megagpu-8g), ``IB`` (ConnectX RoCE: ``NCCL_IB_HCA``
  env, and only when every worker claims a ``ResourceClaimTemplate`` asking for
  ``roce.networking.k8s.aws`` devices its node publishes in a ``ResourceSlice``); otherwise NCCL
  falls back to ``Socket`` (``NET/IB : No device found.`` first for RoCE).  Every launch is
  recorded in ``FakeCluster.state["nccl_launches"]`` (jobset, network, workers, termination message).
* **Termination message** — a launcher that copies its results to ``/dev/termination-log`` (the
  GKE runtime's wrapper) ends with the rows and the ``# Avg bus bandwidth`` trailer there
  (:func:`results_digest`, ≤3900 bytes), as kubelet reports it in ``state.terminated.message``.
* **TCPXO preflight** — a probe pod that tests the host's
  ``/home/kubernetes/bin/nvidia/lib64/nccl-env-profile.sh`` fails (``tcpxo-artifact-missing``) on a
  node where the TCPXO NCCL plugin installer does not run.
* **Trainer's validating webhook** — :func:`deny_trainjobs` makes it refuse TrainJob creates the
  way its informer-cache race does (403, :func:`trainer_webhook_denial`).

A test can script the launcher log verbatim with ``fc.state["nccl"] = {"launcher_log": text}``.

Faults (read from ``FakeCluster.state["faults"]`` when the launcher starts, or at install):

* ``nccl-low-bandwidth`` — bus bandwidth about a quarter of healthy (H100: ~120 GB/s at 16G);
* ``nccl-socket-fallback`` — ``NCCL INFO Using network Socket`` (the EFA plugin did not load)
  while the bandwidth stays healthy, so only transport verification catches it;
* ``nccl-launcher-never-starts`` — the launcher pod stays Pending (``ImagePullBackOff``);
* ``nccl-launcher-log-rotated`` — the launcher log kubelet serves holds only FasTrak teardown noise
  (the results table was rotated out); a termination message still carries the rows;
* ``trainer-webhook-cache-lag`` — the first 3 TrainJob creates are denied (webhook cache race);
* ``trainer-webhook-never-admits`` — every TrainJob create is denied.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import ApiError, Obj, clone

if TYPE_CHECKING:
    from aicr_pytest.testing.cluster import FakeCluster
    from aicr_pytest.testing.profiles import ClusterProfile

__all__ = [
    "FAULT_LAUNCHER_NEVER_STARTS",
    "FAULT_LOG_ROTATED",
    "FAULT_LOW_BANDWIDTH",
    "FAULT_SOCKET_FALLBACK",
    "FAULT_WEBHOOK_CACHE_LAG",
    "FAULT_WEBHOOK_NEVER_ADMITS",
    "deny_trainjobs",
    "install",
    "results_digest",
    "trainer_webhook_denial",
]

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
TRAINJOB_NAME_LABEL = "trainer.kubeflow.org/trainjob-name"
LAUNCHER = "launcher"
NODE = "node"

FAULT_LOW_BANDWIDTH = "nccl-low-bandwidth"
FAULT_SOCKET_FALLBACK = "nccl-socket-fallback"
FAULT_LAUNCHER_NEVER_STARTS = "nccl-launcher-never-starts"
FAULT_LOG_ROTATED = "nccl-launcher-log-rotated"
FAULT_WEBHOOK_CACHE_LAG = "trainer-webhook-cache-lag"
FAULT_WEBHOOK_NEVER_ADMITS = "trainer-webhook-never-admits"
#: TrainJob creates the ``trainer-webhook-cache-lag`` fault denies before the cache catches up.
WEBHOOK_LAG_DENIALS = 3

#: The DaemonSet (``app`` label, kube-system) of GKE's GPUDirect-TCPXO NCCL plugin installer: it
#: puts ``nccl-env-profile.sh`` and the FasTrak plugin under ``/home/kubernetes/bin/nvidia``.
TCPXO_INSTALLER = "nccl-tcpxo-installer"
TCPXO_HOST_DIR = "/home/kubernetes/bin/nvidia"
TCPXO_SIDECAR = "tcpxo-daemon"
GKE_INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
GKE_GPU_NICS = 8
#: The DRA DeviceClass (and driver) of AWS ConnectX RoCE NICs.
ROCE_DEVICE_CLASS = "roce.networking.k8s.aws"
ROCE_DRIVER = "roce.networking.k8s.aws"
#: ``tail -c`` of the GKE launcher wrapper: the kubelet keeps at most 4 KiB of termination message.
TERMINATION_MESSAGE_BYTES = 3900

#: Timeline (clock seconds): short, so ``validate --simulate`` finishes the benchmark in seconds.
WORKER_START_S = 1.0
LAUNCHER_START_S = 1.0
LAUNCHER_RUN_S = 4.0
LOW_BANDWIDTH_FACTOR = 0.265
#: Bus bandwidth when the runtime's transport is missing on the workers and NCCL falls back to TCP
#: sockets over the pod network (eth0).
SOCKET_FALLBACK_GBPS = 11.5
_LATENCY_US = 45.0
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def install(fc: FakeCluster, profile: ClusterProfile) -> None:
    player = NcclPlayer(fc)
    if FAULT_WEBHOOK_NEVER_ADMITS in profile.faults:
        deny_trainjobs(fc, times=None)
    elif FAULT_WEBHOOK_CACHE_LAG in profile.faults:
        deny_trainjobs(fc, times=WEBHOOK_LAG_DENIALS)
    fc.sim.script(
        PodScript(
            predicate=lambda pod: _tcpxo_probe(pod) and not _tcpxo_plugin_on(fc.sim, _node_of(pod)),
            exit_code=1,
            logs="tcpxo-artifact-missing\n",
        )
    )
    fc.sim.script(
        PodScript(
            labels={REPLICATED_JOB_LABEL: NODE},
            predicate=lambda pod: JOBSET_NAME_LABEL in (pod["metadata"].get("labels") or {}),
            start_after=WORKER_START_S,
            run_for=None,
            logs="Server listening on 0.0.0.0 port 22.\nServer listening on :: port 22.\n",
        )
    )
    fc.sim.on_create("trainer.kubeflow.org", "v1alpha1", "trainjobs", player.on_trainjob)
    fc.sim.on_update("batch", "v1", "jobs", player.on_job)
    fc.sim.on_create("resource.nvidia.com", "v1beta1", "computedomains", player.on_compute_domain)


# ------------------------------------------------------------------------------- helpers --
def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _owner(obj: Obj) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _condition(ctype: str, reason: str, message: str, now: str) -> Obj:
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
        ref = _dig(json.loads(body or b"{}"), "spec", "runtimeRef") or {}
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


def deny_trainjobs(fc: FakeCluster, times: int | None = WEBHOOK_LAG_DENIALS) -> Any:
    """Trainer's webhook refuses the next ``times`` TrainJob creates (``None``: all of them) with
    403 Forbidden and :func:`trainer_webhook_denial`; returns the fault (``hits`` counts denials)."""
    return fc.faults.reject(
        "POST",
        r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/[^/]+/trainjobs$",
        status=403,
        reason="Forbidden",
        message=trainer_webhook_denial,
        times=times,
    )


_RESULT_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]")


def results_digest(log: str, limit: int = TERMINATION_MESSAGE_BYTES) -> str:
    """What the GKE launcher wrapper writes to ``/dev/termination-log`` on success: the results rows
    (size and count numeric, then a type word) and the ``Avg bus bandwidth`` trailer, last ``limit``
    bytes (``awk … | tail -c 3900``)."""
    kept = [line for line in log.splitlines() if _RESULT_ROW.match(line) or "Avg bus bandwidth" in line]
    data = "".join(line + "\n" for line in kept).encode()
    return data[-limit:].decode("utf-8", "replace")


def _node_of(pod: Obj) -> str:
    return str(_dig(pod, "spec", "nodeName") or "")


def _tcpxo_probe(pod: Obj) -> bool:
    """A pod that mounts the host's TCPXO directory and tests for ``nccl-env-profile.sh``."""
    spec = pod.get("spec") or {}
    mounts = any(
        _dig(v, "hostPath", "path") == TCPXO_HOST_DIR
        for v in spec.get("volumes") or []
        if isinstance(v, dict)
    )
    script = " ".join(
        str(w) for c in spec.get("containers") or [] for w in (c.get("command") or []) + (c.get("args") or [])
    )
    return mounts and spec.get("restartPolicy") == "Never" and "nccl-env-profile.sh" in script


def _tcpxo_plugin_on(sim: Simulator, node: str) -> bool:
    """The TCPXO NCCL plugin installer runs (Running pod) on ``node``."""
    return any(
        _dig(p, "spec", "nodeName") == node and _dig(p, "status", "phase") == "Running"
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
    return sidecar and len(nics) >= GKE_GPU_NICS + 1 and _tcpxo_plugin_on(sim, _node_of(pod))


def roce_devices(sim: Simulator, pod: Obj) -> int:
    """RoCE NICs the worker gets: what its claim templates ask of :data:`ROCE_DEVICE_CLASS`, when the
    templates exist and its node publishes that many devices (0 otherwise)."""
    ns = pod["metadata"].get("namespace", "default")
    wanted = 0
    for claim in _dig(pod, "spec", "resourceClaims") or []:
        name = claim.get("resourceClaimTemplateName")
        if not name:
            continue
        rct = sim.store.peek(sim.rt("resource.k8s.io/v1", "ResourceClaimTemplate"), ns, str(name))
        for req in _dig(rct, "spec", "spec", "devices", "requests") or []:
            exact = req.get("exactly") or {}
            if exact.get("deviceClassName") == ROCE_DEVICE_CLASS:
                wanted += int(exact.get("count") or 1)
    published = sum(
        len(_dig(s, "spec", "devices") or [])
        for s in sim.store.iter_objects(sim.rt("resource.k8s.io/v1", "ResourceSlice"))
        if _dig(s, "spec", "driver") == ROCE_DRIVER and _dig(s, "spec", "nodeName") == _node_of(pod)
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
    job_spec = clone(_dig(rj, "template", "spec") or {})
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
    name = _dig(cd, "spec", "channel", "resourceClaimTemplate", "name")
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
        "conditions": [_condition(state, "AllJobsCompleted" if ok else "FailedJobs", message, now)],
    }


def trainjob_terminal_status(ok: bool, now: str) -> Obj:
    """The ``status`` Kubeflow Trainer writes on a TrainJob whose JobSet finished."""
    return {
        "conditions": [
            _condition("Created", "JobsCreated", "TrainJob Jobs are created", now),
            _condition(
                "Complete" if ok else "Failed",
                "JobSetCompleted" if ok else "JobSetFailed",
                "TrainJob is completed" if ok else "TrainJob has failed",
                now,
            ),
        ]
    }


def _job_outcome(job: Obj) -> str | None:
    for cond in _dig(job, "status", "conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def parse_size(text: str) -> int:
    """nccl-tests size arguments: ``1K``, ``16G``, ``512`` (binary units)."""
    t = str(text).strip().upper().removesuffix("B")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS else ""
    number = t[:-1] if unit else t
    return int(float(number) * _SIZE_UNITS[unit])


@dataclass(frozen=True)
class LauncherSpec:
    """What the launcher's ``mpirun … all_reduce_perf`` line asks for."""

    min_bytes: int = 1 << 10
    max_bytes: int = 16 << 30
    factor: int = 2
    debug_info: bool = False
    nvls: bool = False
    network: str = "Socket"  #: what NCCL would pick with the runtime's env (no fault)
    termination_log: bool = False  #: the launcher copies its results to /dev/termination-log

    @classmethod
    def from_container(cls, container: Mapping[str, Any] | None) -> LauncherSpec:
        if not container:
            return cls()
        words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        env = {str(e.get("name")): str(e.get("value", "")) for e in container.get("env") or []}
        text = " ".join(words)
        flags = {**env, **dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))}

        def arg(flag: str, default: str) -> str:
            for i, w in enumerate(words[:-1]):
                if w == flag:
                    return words[i + 1]
            return default

        try:
            min_bytes = parse_size(arg("-b", "1K"))
            max_bytes = parse_size(arg("-e", "16G"))
            factor = max(2, int(arg("-f", "2")))
        except ValueError:
            min_bytes, max_bytes, factor = 1 << 10, 16 << 30, 2
        nvls = flags.get("NCCL_NVLS_ENABLE") == "1"
        if flags.get("FI_PROVIDER") == "efa" and flags.get("NCCL_NET_PLUGIN") != "none":
            network = "AWS Libfabric"
        elif "NCCL_IB_HCA" in flags or flags.get("NCCL_IB_DISABLE") == "0":
            network = "IB"
        elif any(k.startswith("NCCL_FASTRAK_") for k in flags):
            network = "FasTrak"
        else:
            network = "Socket"
        return cls(
            min_bytes=min_bytes,
            max_bytes=max(max_bytes, min_bytes),
            factor=factor,
            debug_info=flags.get("NCCL_DEBUG", "").upper() == "INFO" or "NCCL_DEBUG=INFO" in text,
            nvls=nvls,
            network=network,
            termination_log="/dev/termination-log" in text,
        )


def peak_busbw(product: str, spec: LauncherSpec) -> float:
    """Healthy out-of-place bus bandwidth at the largest message (GB/s) for the GPU and transport."""
    p = product.upper()
    if "GB200" in p or "GB300" in p:
        if spec.nvls:
            return 742.0
        return 96.0 if spec.network != "Socket" else 380.0
    if "B200" in p:
        return 520.0
    if "H200" in p:
        return 468.0
    if "H100" in p:  # a3-megagpu-8g over TCPXO measured ~338-340 GB/s (AICR overlay note)
        return 340.0 if spec.network == "FasTrak" else 452.0
    return 300.0


def device_name(product: str) -> str:
    """GFD product label → the name nvidia-smi / nccl-tests print (``NVIDIA-H100-80GB-HBM3`` → …)."""
    return product.replace("-", " ") if product else "NVIDIA GPU"


def render_launcher_log(
    *,
    jobset: str,
    spec: LauncherSpec,
    workers: Sequence[str],
    procs_per_node: int,
    product: str,
    peak_gbps: float,
    network: str,
    seed: str,
) -> tuple[str, list[str], str]:
    """(``head``, ``rows``, ``trailer``) of a launcher log: ``head`` is written when the launcher
    starts, rows one by one, the trailer last."""
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:12], 16))
    ranks = max(1, len(workers) * max(1, procs_per_node))
    factor = 2.0 * (ranks - 1) / ranks if ranks > 1 else 1.0
    peak = peak_gbps * rng.uniform(0.985, 1.015)
    algbw_peak = peak / factor if factor else peak
    head: list[str] = []
    for w in workers:
        head.append(f"Warning: Permanently added '{w}.{jobset}' (ED25519) to the list of known hosts.")
    head.append(
        f"# nThread 1 nGpus 1 minBytes {spec.min_bytes} maxBytes {spec.max_bytes} "
        f"step: {spec.factor}(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
    )
    head.append("#")
    head.append("# Using devices")
    dev = device_name(product)
    for r in range(ranks):
        host = workers[r // procs_per_node] if workers else "localhost"
        local = r % procs_per_node
        pid = 41 + local
        head.append(
            f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10} device {local:2d} "
            f"[0000:{0x18 + 0x10 * local:02x}:00] {dev}"
        )
    if spec.debug_info:
        host = workers[0] if workers else "localhost"
        pfx = f"{host}:41:41 [0] NCCL INFO "
        head += [
            f"{pfx}Bootstrap: Using eth0:10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}<0>",
            f"{pfx}NCCL version 2.27.7+cuda12.9",
            f"{pfx}cudaDriverVersion 12090",
        ]
        if network == "AWS Libfabric":
            head += [
                f"{pfx}NET/OFI Initializing aws-ofi-nccl 1.16.3",
                f"{pfx}NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
                f"{pfx}NET/Plugin: Loaded net plugin Libfabric (v10)",
            ]
        elif network == "Socket" and spec.network == "AWS Libfabric":
            head += [
                f"{pfx}NET/OFI aws-ofi-nccl initialization failed",
                f"{pfx}NET/Plugin: Failed to initialize net plugin Libfabric, "
                "falling back to internal implementation",
                f"{pfx}NET/Socket : Using [0]eth0:10.0.1.17<0>",
            ]
        elif network == "IB":
            nics = " ".join(f"[{i}]rocep{144 + 16 * i}s0:1/RoCE" for i in range(max(1, procs_per_node)))
            head.append(f"{pfx}NET/IB : Using {nics} ; OOB eth0:10.0.1.17<0>")
        elif network == "Socket" and spec.network == "IB":
            head += [f"{pfx}NET/IB : No device found.", f"{pfx}NET/Socket : Using [0]eth0:10.0.1.17<0>"]
        elif network == "Socket":
            head.append(f"{pfx}NET/Socket : Using [0]eth0:10.0.1.17<0>")
        head.append(f"{pfx}Using network {network}")
        if spec.nvls:
            head += [
                f"{pfx}MNNVL 1 cliqueId 1 cliqueSize {ranks} cliqueRank 0",
                f"{pfx}NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)",
            ]
        comm = f"0x{rng.getrandbits(44):x}"
        for ch in range(2):
            ring = " ".join(f"{(i + ch) % ranks:3d}" for i in range(ranks))
            head.append(f"{pfx}Channel {ch:02d}/24 : {ring}")
        if spec.nvls:
            head.append(
                f"{pfx}NVLS comm {comm} headRank 0 nHeads {procs_per_node} nvlsRanks {ranks} "
                f"buffSize 1048576 memSize 2097152 nvlsPerRankSize 201326592"
            )
        head.append(
            f"{pfx}comm {comm} rank 0 nRanks {ranks} nNodes {len(workers)} localRanks {procs_per_node} "
            f"localRank 0 MNNVL {1 if spec.nvls else 0} - Init COMPLETE"
        )
    head += ["#", *_TABLE_HEADER]
    rows: list[str] = []
    busbws: list[float] = []
    size = spec.min_bytes
    while size <= spec.max_bytes:
        t1 = (_LATENCY_US + size / (algbw_peak * 1e3)) * rng.uniform(0.99, 1.01)
        t2 = t1 * rng.uniform(0.995, 1.02)
        a1, a2 = size / t1 / 1e3, size / t2 / 1e3
        b1, b2 = a1 * factor, a2 * factor
        busbws.append(b1)
        lead = f"{size:>12}  {size // 4:>12}  {'float':>8}  {'sum':>6}  {-1:>6}"
        rows.append(
            f"{lead}  {_us(t1):>7}  {a1:6.2f}  {b1:6.2f}  {0:>6}  {_us(t2):>7}  {a2:6.2f}  {b2:6.2f}  {0:>6}"
        )
        size *= spec.factor
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    trailer = [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {avg:.4g} ",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "#",
    ]
    return "\n".join(head) + "\n", rows, "\n".join(trailer) + "\n"


_GROUP = "   time   algbw   busbw #wrong  "
_TABLE_HEADER = (
    "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place",
    "#       size         count      type   redop    root  " + _GROUP + _GROUP.rstrip(),
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    + "            (us)  (GB/s)  (GB/s)",
)


def _us(t: float) -> str:
    if t < 1e3:
        return f"{t:.2f}"
    if t < 1e5:
        return f"{t:.1f}"
    return f"{t:.0f}"


# -------------------------------------------------------------------------------- player --
class NcclPlayer:
    def __init__(self, fc: FakeCluster) -> None:
        self.fc = fc

    @property
    def faults(self) -> set[str]:
        return set(self.fc.state.get("faults") or [])

    # -- Trainer --------------------------------------------------------------------------
    def on_trainjob(self, sim: Simulator, trainjob: Obj) -> None:
        store = sim.store
        meta = trainjob["metadata"]
        ns, name = meta.get("namespace", "default"), meta["name"]
        tj_rt = sim.rt(TRAINER_API, "TrainJob")
        current = store.peek(tj_rt, ns, name)
        if current is None or meta.get("uid") != current["metadata"].get("uid"):
            return
        now = sim.clock.timestamp()
        ref = _dig(trainjob, "spec", "runtimeRef") or {}
        kind = str(ref.get("kind") or "ClusterTrainingRuntime")
        runtime = None
        try:
            rrt = sim.rt(TRAINER_API, kind)
            runtime = store.peek(rrt, ns if rrt.namespaced else None, str(ref.get("name") or ""))
        except ApiError:
            runtime = None
        if runtime is None:
            sim.set_status(
                TRAINER_API,
                "TrainJob",
                name,
                {
                    "conditions": [
                        {
                            **_condition(
                                "Created",
                                "JobsBuildFailed",
                                f'{kind} "{ref.get("name")}" not found',
                                now,
                            ),
                            "status": "False",
                        }
                    ]
                },
                ns,
            )
            return
        rjobs = [
            j
            for j in _dig(runtime, "spec", "template", "spec", "replicatedJobs") or []
            if isinstance(j, dict)
        ]
        num_nodes = int(
            _dig(trainjob, "spec", "trainer", "numNodes")
            or _dig(runtime, "spec", "mlPolicy", "numNodes")
            or 1
        )
        labels = dict(meta.get("labels") or {})
        jobset_body: Obj = {
            "apiVersion": JOBSET_API,
            "kind": "JobSet",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {**labels, TRAINJOB_NAME_LABEL: name},
                "ownerReferences": [_owner(current)],
            },
            "spec": {
                "network": clone(_dig(runtime, "spec", "template", "spec", "network") or {}),
                "successPolicy": clone(_dig(runtime, "spec", "template", "spec", "successPolicy") or {}),
                "replicatedJobs": clone(rjobs),
            },
        }
        try:
            jobset = store.create(sim.rt(JOBSET_API, "JobSet"), ns, jobset_body)
        except ApiError:
            return  # JobSet CRD not installed: Trainer's controller would be crash-looping too
        has_workers = any(j.get("name") == NODE for j in rjobs)
        for rj in rjobs:
            self._create_job(
                sim, jobset, rj, num_nodes, labels, suspend=rj.get("name") == LAUNCHER and has_workers
            )
        sim.set_status(
            TRAINER_API,
            "TrainJob",
            name,
            {"conditions": [_condition("Created", "JobsCreated", "TrainJob Jobs are created", now)]},
            ns,
        )

    def _create_job(
        self,
        sim: Simulator,
        jobset: Obj,
        rj: Obj,
        num_nodes: int,
        labels: Mapping[str, str],
        *,
        suspend: bool,
    ) -> None:
        ns = jobset["metadata"]["namespace"]
        job = replicated_job(jobset, rj, num_nodes, labels, suspend=suspend, owner=_owner(jobset))
        try:
            sim.store.create(sim.rt("batch/v1", "Job"), ns, job)
        except ApiError as exc:
            sim.emit_event(jobset, "FailedCreateJob", exc.message, type_="Warning", component="jobset")

    # -- JobSet progress ----------------------------------------------------------------------
    def on_job(self, sim: Simulator, job: Obj) -> None:
        labels = job["metadata"].get("labels") or {}
        jsname, rname = labels.get(JOBSET_NAME_LABEL), labels.get(REPLICATED_JOB_LABEL)
        if not jsname or not rname:
            return
        ns = job["metadata"].get("namespace", "")
        jobs_rt = sim.rt("batch/v1", "Job")
        current = sim.store.peek(jobs_rt, ns, job["metadata"]["name"])
        if current is None:
            return
        if rname == NODE:
            parallelism = int(_dig(current, "spec", "parallelism") or 1)
            if int(_dig(current, "status", "ready") or 0) >= parallelism:
                self._start_launcher(sim, ns, jsname, current)
        elif rname == LAUNCHER:
            outcome = _job_outcome(current)
            if outcome is not None:
                self._finish(sim, ns, jsname, outcome)

    def _start_launcher(self, sim: Simulator, ns: str, jsname: str, node_job: Obj) -> None:
        jobs_rt = sim.rt("batch/v1", "Job")
        launcher = sim.store.peek(jobs_rt, ns, f"{jsname}-{LAUNCHER}-0")
        if launcher is None or not _dig(launcher, "spec", "suspend"):
            return
        sim.script(self._launcher_script(sim, ns, jsname, launcher, node_job))

        def resume(obj: Obj) -> None:
            obj["spec"]["suspend"] = False

        sim.store.mutate(jobs_rt, ns, launcher["metadata"]["name"], resume)

    def _launcher_script(
        self, sim: Simulator, ns: str, jsname: str, launcher: Obj, node_job: Obj
    ) -> PodScript:
        def matches(pod: Obj) -> bool:
            lab = pod["metadata"].get("labels") or {}
            return (
                pod["metadata"].get("namespace") == ns
                and lab.get(JOBSET_NAME_LABEL) == jsname
                and lab.get(REPLICATED_JOB_LABEL) == LAUNCHER
            )

        faults = self.faults
        if FAULT_LAUNCHER_NEVER_STARTS in faults:
            return PodScript(predicate=matches, waiting_reason="ImagePullBackOff", run_for=None)
        containers = _dig(launcher, "spec", "template", "spec", "containers") or []
        container = next(
            (c for c in containers if c.get("name") == NODE), containers[0] if containers else None
        )
        override = (self.fc.state.get("nccl") or {}).get("launcher_log")
        if isinstance(override, str):  # a test scripts the launcher log verbatim
            return PodScript(
                predicate=matches, start_after=LAUNCHER_START_S, run_for=LAUNCHER_RUN_S, logs={NODE: override}
            )
        spec = LauncherSpec.from_container(container)
        pods = self._worker_pods(sim, ns, node_job)
        workers, product = self._workers(sim, pods)
        procs = self._procs_per_node(sim, ns, jsname, node_job)
        network = self._network(sim, spec, pods)
        peak = peak_busbw(product, spec) if network == spec.network else SOCKET_FALLBACK_GBPS
        if FAULT_LOW_BANDWIDTH in faults:
            peak *= LOW_BANDWIDTH_FACTOR
        if FAULT_SOCKET_FALLBACK in faults:
            network = "Socket"
        head, rows, trailer = render_launcher_log(
            jobset=jsname,
            spec=spec,
            workers=workers,
            procs_per_node=procs,
            product=product,
            peak_gbps=peak,
            network=network,
            seed=f"{ns}/{jsname}",
        )
        message = (
            results_digest(head + "".join(r + "\n" for r in rows) + trailer) if spec.termination_log else None
        )
        self.fc.state.setdefault("nccl_launches", []).append(
            {
                "jobset": f"{ns}/{jsname}",
                "network": network,
                "workers": [p["metadata"]["name"] for p in pods],
                "roce_devices": {p["metadata"]["name"]: roce_devices(sim, p) for p in pods},
                "termination_message": message,
            }
        )
        if FAULT_LOG_ROTATED in faults:  # kubelet rotated the table out: only teardown noise is served
            noise = "".join(
                f"{w}:870:938 [{i % 8}] NCCL INFO NET/FasTrak: SCTP Closed, Socket closed, handler exiting.\n"
                for i in range(200)
                for w in workers[:1]
            )
            return PodScript(
                predicate=matches,
                start_after=LAUNCHER_START_S,
                run_for=LAUNCHER_RUN_S,
                logs={NODE: noise},
                message=message,
            )
        span = LAUNCHER_RUN_S * 0.8
        step = span / max(1, len(rows))
        lines = [(0.05 + i * step, row + "\n") for i, row in enumerate(rows)]
        lines.append((LAUNCHER_RUN_S * 0.9, trailer))
        return PodScript(
            predicate=matches,
            start_after=LAUNCHER_START_S,
            run_for=LAUNCHER_RUN_S,
            logs={NODE: head},
            log_lines=lines,
            log_container=NODE,
            message=message,
        )

    @staticmethod
    def _network(sim: Simulator, spec: LauncherSpec, pods: Sequence[Obj]) -> str:
        """The transport NCCL ends up on: the runtime's choice when every worker has what it needs."""
        if spec.network == "FasTrak" and not (pods and all(tcpxo_ready(sim, p) for p in pods)):
            return "Socket"
        if spec.network == "IB" and not (pods and all(roce_devices(sim, p) > 0 for p in pods)):
            return "Socket"
        return spec.network

    @staticmethod
    def _worker_pods(sim: Simulator, ns: str, node_job: Obj) -> list[Obj]:
        """The Running worker pods of the node Job, in completion-index order."""
        uid = node_job["metadata"]["uid"]
        pods = [
            p
            for p in sim.store.iter_objects(sim.rt("v1", "Pod"), ns)
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
            and _dig(p, "status", "phase") == "Running"
        ]
        pods.sort(
            key=lambda p: int(
                (p["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", 0)
            )
        )
        return pods

    def _workers(self, sim: Simulator, pods: Sequence[Obj]) -> tuple[list[str], str]:
        """Worker hostnames (``<job>-<index>``, index order) and the GPU product of their nodes."""
        hosts = [str(_dig(p, "spec", "hostname") or p["metadata"]["name"]) for p in pods]
        product = ""
        for p in pods:
            node = sim.store.peek(sim.rt("v1", "Node"), None, str(_dig(p, "spec", "nodeName") or ""))
            product = str(
                ((node or {}).get("metadata") or {}).get("labels", {}).get("nvidia.com/gpu.product", "")
            )
            if product:
                break
        return hosts, product

    def _procs_per_node(self, sim: Simulator, ns: str, jsname: str, node_job: Obj) -> int:
        try:
            tj = sim.store.peek(sim.rt(TRAINER_API, "TrainJob"), ns, jsname)
            ref = _dig(tj, "spec", "runtimeRef") or {}
            rrt = sim.rt(TRAINER_API, str(ref.get("kind") or "TrainingRuntime"))
            runtime = sim.store.peek(rrt, ns if rrt.namespaced else None, str(ref.get("name") or ""))
        except ApiError:
            runtime = None
        procs = _dig(runtime, "spec", "mlPolicy", "mpi", "numProcPerNode")
        if procs:
            try:
                return max(1, int(procs))
            except (TypeError, ValueError):
                pass
        for c in _dig(node_job, "spec", "template", "spec", "containers") or []:
            gpus = _dig(c, "resources", "limits", "nvidia.com/gpu")
            if gpus:
                return max(1, int(str(gpus)))
        return 1

    def _finish(self, sim: Simulator, ns: str, jsname: str, outcome: str) -> None:
        js_rt = sim.rt(JOBSET_API, "JobSet")
        jobset = sim.store.peek(js_rt, ns, jsname)
        if jobset is None or _dig(jobset, "status", "terminalState"):
            return
        now = sim.clock.timestamp()
        ok = outcome == "Complete"
        sim.set_status(JOBSET_API, "JobSet", jsname, jobset_terminal_status(ok, now), ns)
        tj_rt = sim.rt(TRAINER_API, "TrainJob")
        if sim.store.peek(tj_rt, ns, jsname) is not None:
            sim.set_status(TRAINER_API, "TrainJob", jsname, trainjob_terminal_status(ok, now), ns)
        if ok:  # JobSet deletes the still-active child Jobs of a finished set (the sshd workers)
            sim.store.remove(sim.rt("batch/v1", "Job"), ns, f"{jsname}-{NODE}-0")

    # -- DRA driver: ComputeDomain -> IMEX channel ResourceClaimTemplate --------------------------
    def on_compute_domain(self, sim: Simulator, cd: Obj) -> None:
        meta = cd["metadata"]
        ns = meta.get("namespace", "default")
        current = sim.store.peek(sim.rt(str(cd["apiVersion"]), "ComputeDomain"), ns, meta["name"])
        if current is None:
            return
        body = imex_claim_template(current, _owner(current))
        if body is None:
            return
        try:
            sim.store.create(sim.rt("resource.k8s.io/v1", "ResourceClaimTemplate"), ns, body)
        except ApiError as exc:
            sim.emit_event(
                current, "FailedCreate", exc.message, type_="Warning", component="compute-domain-controller"
            )
            return
        sim.set_status(str(cd["apiVersion"]), "ComputeDomain", meta["name"], COMPUTE_DOMAIN_READY, ns)
