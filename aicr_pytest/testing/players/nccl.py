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
  :func:`imex_claim_template`, shared with the repository's control-plane test controller in
  ``tests/harness``) and ``status: Ready``.

* **Transports** — what NCCL would pick given the runtime's env *and* what the workers really got:
  AWS Libfabric (EFA env), ``FasTrak`` (GKE GPUDirect-TCPXO: ``NCCL_FASTRAK_*`` env, and only when
  every worker has the ``tcpxo-daemon`` sidecar, eth0 plus 8 GPU NICs in its
  ``networking.gke.io/interfaces`` annotation and a node where the TCPXO NCCL plugin installer
  runs; H100 ≈ 340 GB/s as measured on a3-megagpu-8g), ``IB`` (ConnectX RoCE: ``NCCL_IB_HCA``
  env, and only when every worker claims a ``ResourceClaimTemplate`` asking for
  ``roce.networking.k8s.aws`` devices its node publishes in a ``ResourceSlice``); otherwise NCCL
  falls back to ``Socket`` (``NET/IB : No device found.`` first for RoCE).  Every launch is
  recorded in ``FakeCluster.state["nccl_launches"]`` (jobset, network, workers, their nodes,
  termination message).
* **Termination message** — a launcher that copies its results to ``/dev/termination-log`` (the
  GKE runtime's wrapper) ends with the rows and the ``# Avg bus bandwidth`` trailer there
  (:func:`results_digest`, ≤3900 bytes), as kubelet reports it in ``state.terminated.message``.
* **NET preflight** — the NVreg probe pods print their node's driver files
  (:mod:`.nvreg_probe`; fault ``driver-r595``).
* **TCPXO preflight** — a probe pod that tests the host's
  ``/home/kubernetes/bin/nvidia/lib64/nccl-env-profile.sh`` fails (``tcpxo-artifact-missing``) on a
  node where the TCPXO NCCL plugin installer does not run.
* **Trainer's validating webhook** — :func:`deny_trainjobs` makes it refuse TrainJob creates the
  way its informer-cache race does (403, :func:`trainer_webhook_denial`).

The shapes (Trainer, JobSet, ComputeDomain objects, transport probes) live in
:mod:`.nccl_workloads`, the launcher log in :mod:`.nccl_launcher`; both are re-exported here.

A test can script the launcher log verbatim with ``fc.state["nccl"] = {"launcher_log": text}``.

Faults (read from ``FakeCluster.state["faults"]`` when the launcher starts, or at install):

* ``nccl-low-bandwidth`` — bus bandwidth about a quarter of healthy (H100: ~120 GB/s at 16G);
* ``nccl-bandwidth-regression`` — bus bandwidth 30 % below healthy (H100: ~316 GB/s at 16G), still
  above the example recipes' floors: only a baseline (``--max-regression``) catches it;
* ``nccl-slow-node`` — bus bandwidth a tenth of healthy whenever the last GPU node in name order
  is one of the run's workers (bad-node isolation names it); a test scripts a link fault with
  ``fc.state["nccl"] = {"slow_node_sets": [[node, ...]]}`` (slow only when all of a set take part);
* ``nccl-socket-fallback`` — ``NCCL INFO Using network Socket`` (the EFA plugin did not load)
  while the bandwidth stays healthy, so only transport verification catches it;
* ``nccl-launcher-never-starts`` — the launcher pod stays Pending (``ImagePullBackOff``);
* ``nccl-launcher-log-rotated`` — the launcher log kubelet serves holds only FasTrak teardown noise
  (the results table was rotated out); a termination message still carries the rows;
* ``trainer-webhook-cache-lag`` — the first 3 TrainJob creates are denied (webhook cache race);
* ``trainer-webhook-never-admits`` — every TrainJob create is denied.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.builders import GKE_GPU_NICS, ROCE_DEVICE_CLASS, ROCE_DRIVER, TCPXO_INSTALLER
from aicr_pytest.testing.players import nvreg_probe
from aicr_pytest.testing.players.nccl_launcher import (
    TERMINATION_MESSAGE_BYTES,
    LauncherSpec,
    bandwidth_factor,
    device_name,
    parse_size,
    peak_busbw,
    render_launcher_log,
    results_digest,
    slow_node_sets,
)
from aicr_pytest.testing.players.nccl_workloads import (
    COMPUTE_DOMAIN_LABEL,
    COMPUTE_DOMAIN_READY,
    GKE_INTERFACES_ANNOTATION,
    IMEX_CHANNEL_CLASS,
    JOB_INDEX_LABEL,
    JOBSET_API,
    JOBSET_NAME_LABEL,
    LAUNCHER,
    NODE,
    REPLICATED_JOB_LABEL,
    REPLICATED_JOB_REPLICAS_LABEL,
    TCPXO_HOST_DIR,
    TCPXO_SIDECAR,
    TRAINER_API,
    TRAINJOB_NAME_LABEL,
    condition,
    dig,
    imex_claim_template,
    is_tcpxo_probe,
    job_outcome,
    jobset_terminal_status,
    node_of,
    owner_ref,
    replicated_job,
    roce_devices,
    tcpxo_plugin_on,
    tcpxo_ready,
    trainer_webhook_denial,
    trainjob_terminal_status,
)
from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import ApiError, Obj, clone

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = [
    "COMPUTE_DOMAIN_LABEL",
    "COMPUTE_DOMAIN_READY",
    "FAULT_LAUNCHER_NEVER_STARTS",
    "FAULT_LOG_ROTATED",
    "FAULT_LOW_BANDWIDTH",
    "FAULT_SLOW_NODE",
    "FAULT_SOCKET_FALLBACK",
    "FAULT_WEBHOOK_CACHE_LAG",
    "FAULT_WEBHOOK_NEVER_ADMITS",
    "GKE_GPU_NICS",
    "GKE_INTERFACES_ANNOTATION",
    "IMEX_CHANNEL_CLASS",
    "JOBSET_API",
    "JOBSET_NAME_LABEL",
    "JOB_INDEX_LABEL",
    "LAUNCHER",
    "NODE",
    "REPLICATED_JOB_LABEL",
    "REPLICATED_JOB_REPLICAS_LABEL",
    "ROCE_DEVICE_CLASS",
    "ROCE_DRIVER",
    "TCPXO_HOST_DIR",
    "TCPXO_INSTALLER",
    "TCPXO_SIDECAR",
    "TERMINATION_MESSAGE_BYTES",
    "TRAINER_API",
    "TRAINJOB_NAME_LABEL",
    "LauncherSpec",
    "NcclPlayer",
    "bandwidth_factor",
    "deny_trainjobs",
    "device_name",
    "fault_factor",
    "imex_claim_template",
    "install",
    "jobset_terminal_status",
    "parse_size",
    "peak_busbw",
    "render_launcher_log",
    "replicated_job",
    "results_digest",
    "roce_devices",
    "slow_node_sets",
    "tcpxo_ready",
    "trainer_webhook_denial",
    "trainjob_terminal_status",
]

FAULT_LOW_BANDWIDTH = "nccl-low-bandwidth"
FAULT_SOCKET_FALLBACK = "nccl-socket-fallback"
FAULT_LAUNCHER_NEVER_STARTS = "nccl-launcher-never-starts"
FAULT_LOG_ROTATED = "nccl-launcher-log-rotated"
FAULT_WEBHOOK_CACHE_LAG = "trainer-webhook-cache-lag"
FAULT_WEBHOOK_NEVER_ADMITS = "trainer-webhook-never-admits"
FAULT_SLOW_NODE = "nccl-slow-node"
FAULT_BANDWIDTH_REGRESSION = "nccl-bandwidth-regression"
#: TrainJob creates the ``trainer-webhook-cache-lag`` fault denies before the cache catches up.
WEBHOOK_LAG_DENIALS = 3

#: Timeline (clock seconds): short, so ``validate --simulate`` finishes the benchmark in seconds.
WORKER_START_S = 1.0
LAUNCHER_START_S = 1.0
LAUNCHER_RUN_S = 4.0
LOW_BANDWIDTH_FACTOR = 0.265
#: ``nccl-bandwidth-regression``: 30 % below healthy
REGRESSION_FACTOR = 0.7
#: Bus bandwidth when the runtime's transport is missing on the workers and NCCL falls back to TCP
#: sockets over the pod network (eth0).
SOCKET_FALLBACK_GBPS = 11.5


def fault_factor(faults: Collection[str]) -> float:
    """The bus-bandwidth factor of the bandwidth faults (both backends' launchers apply it)."""
    factor = LOW_BANDWIDTH_FACTOR if FAULT_LOW_BANDWIDTH in faults else 1.0
    return factor * (REGRESSION_FACTOR if FAULT_BANDWIDTH_REGRESSION in faults else 1.0)


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    player = NcclPlayer(fc)
    nvreg_probe.install(fc, profile)  # the NET preflight's probe pods (and the driver-r595 fault)
    if FAULT_WEBHOOK_NEVER_ADMITS in profile.faults:
        deny_trainjobs(fc, times=None)
    elif FAULT_WEBHOOK_CACHE_LAG in profile.faults:
        deny_trainjobs(fc, times=WEBHOOK_LAG_DENIALS)
    fc.sim.script(
        PodScript(
            predicate=lambda pod: is_tcpxo_probe(pod) and not tcpxo_plugin_on(fc.sim, node_of(pod)),
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


def deny_trainjobs(fc: SimulatedCluster, times: int | None = WEBHOOK_LAG_DENIALS) -> Any:
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


# -------------------------------------------------------------------------------- player --
class NcclPlayer:
    def __init__(self, fc: SimulatedCluster) -> None:
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
        ref = dig(trainjob, "spec", "runtimeRef") or {}
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
                            **condition(
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
            j for j in dig(runtime, "spec", "template", "spec", "replicatedJobs") or [] if isinstance(j, dict)
        ]
        num_nodes = int(
            dig(trainjob, "spec", "trainer", "numNodes") or dig(runtime, "spec", "mlPolicy", "numNodes") or 1
        )
        labels = dict(meta.get("labels") or {})
        jobset_body: Obj = {
            "apiVersion": JOBSET_API,
            "kind": "JobSet",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {**labels, TRAINJOB_NAME_LABEL: name},
                "ownerReferences": [owner_ref(current)],
            },
            "spec": {
                "network": clone(dig(runtime, "spec", "template", "spec", "network") or {}),
                "successPolicy": clone(dig(runtime, "spec", "template", "spec", "successPolicy") or {}),
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
            {"conditions": [condition("Created", "JobsCreated", "TrainJob Jobs are created", now)]},
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
        job = replicated_job(jobset, rj, num_nodes, labels, suspend=suspend, owner=owner_ref(jobset))
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
            parallelism = int(dig(current, "spec", "parallelism") or 1)
            if int(dig(current, "status", "ready") or 0) >= parallelism:
                self._start_launcher(sim, ns, jsname, current)
        elif rname == LAUNCHER:
            outcome = job_outcome(current)
            if outcome is not None:
                self._finish(sim, ns, jsname, outcome)

    def _start_launcher(self, sim: Simulator, ns: str, jsname: str, node_job: Obj) -> None:
        jobs_rt = sim.rt("batch/v1", "Job")
        launcher = sim.store.peek(jobs_rt, ns, f"{jsname}-{LAUNCHER}-0")
        if launcher is None or not dig(launcher, "spec", "suspend"):
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
        containers = dig(launcher, "spec", "template", "spec", "containers") or []
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
        peak *= fault_factor(faults)
        scripted = (self.fc.state.get("nccl") or {}).get("slow_node_sets") or ()
        slow = slow_node_sets(faults, sim.store.iter_objects(sim.rt("v1", "Node"), None), scripted)
        peak *= bandwidth_factor({node_of(p) for p in pods}, slow)
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
                "nodes": [node_of(p) for p in pods],
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
            and dig(p, "status", "phase") == "Running"
        ]
        pods.sort(
            key=lambda p: int(
                (p["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", 0)
            )
        )
        return pods

    def _workers(self, sim: Simulator, pods: Sequence[Obj]) -> tuple[list[str], str]:
        """Worker hostnames (``<job>-<index>``, index order) and the GPU product of their nodes."""
        hosts = [str(dig(p, "spec", "hostname") or p["metadata"]["name"]) for p in pods]
        product = ""
        for p in pods:
            node = sim.store.peek(sim.rt("v1", "Node"), None, str(dig(p, "spec", "nodeName") or ""))
            product = str(
                ((node or {}).get("metadata") or {}).get("labels", {}).get("nvidia.com/gpu.product", "")
            )
            if product:
                break
        return hosts, product

    def _procs_per_node(self, sim: Simulator, ns: str, jsname: str, node_job: Obj) -> int:
        try:
            tj = sim.store.peek(sim.rt(TRAINER_API, "TrainJob"), ns, jsname)
            ref = dig(tj, "spec", "runtimeRef") or {}
            rrt = sim.rt(TRAINER_API, str(ref.get("kind") or "TrainingRuntime"))
            runtime = sim.store.peek(rrt, ns if rrt.namespaced else None, str(ref.get("name") or ""))
        except ApiError:
            runtime = None
        procs = dig(runtime, "spec", "mlPolicy", "mpi", "numProcPerNode")
        if procs:
            try:
                return max(1, int(procs))
            except (TypeError, ValueError):
                pass
        for c in dig(node_job, "spec", "template", "spec", "containers") or []:
            gpus = dig(c, "resources", "limits", "nvidia.com/gpu")
            if gpus:
                return max(1, int(str(gpus)))
        return 1

    def _finish(self, sim: Simulator, ns: str, jsname: str, outcome: str) -> None:
        js_rt = sim.rt(JOBSET_API, "JobSet")
        jobset = sim.store.peek(js_rt, ns, jsname)
        if jobset is None or dig(jobset, "status", "terminalState"):
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
        body = imex_claim_template(current, owner_ref(current))
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
