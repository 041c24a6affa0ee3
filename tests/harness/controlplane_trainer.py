"""Test controllers for the NCCL checks on the real control plane: Kubeflow Trainer, JobSet, the launcher.

The real apiserver, Job controller, scheduler, garbage collector and kwok do everything they can; these
controllers play only what the cluster lacks (the Trainer and JobSet controllers, and what the launcher
container prints), polling the apiserver as the admin, as :class:`~.controlplane_players.PodPlayer` does.

:class:`TrainerController` (Kubeflow Trainer v2 + JobSet), per ``TrainJob``:

* resolves ``spec.runtimeRef`` (a namespaced ``TrainingRuntime`` or a ``ClusterTrainingRuntime``);
  when it is missing the TrainJob gets ``Created=False`` (``JobsBuildFailed``), as Trainer reports it;
* creates what Trainer's MPI plugin creates: the SSH-key ``Secret`` the runtime's pods mount as
  ``mpi-ssh-auth`` (the runtime template mounts that volume without declaring it; the apiserver
  rejects such a pod template, so the plugin's volume is added to every replicatedJob that mounts it);
* creates the ``JobSet`` of the same name (owned by the TrainJob) and, as the JobSet controller does,
  one ``batch/v1`` Job per replicatedJob (``<jobset>-<rjob>-0``, Indexed, owned by the JobSet) whose
  pod template carries the JobSet labels (``jobset.sigs.k8s.io/jobset-name``, ``…/replicatedjob-name``,
  ``…/job-index``, ``trainer.kubeflow.org/trainjob-name``) and ``subdomain: <jobset>``. The ``node``
  Job runs ``numNodes`` workers; the launcher Job is created suspended and resumed once every worker
  is Ready (the MPI runtime's launcher depends on the node job). The *real* Job controller creates
  the pods, the scheduler binds them to kwok nodes with enough ``nvidia.com/gpu`` and
  ``vpc.amazonaws.com/efa``, kwok runs them. Pods carry :data:`~.controlplane.RUN_FOR_ANNOTATION`
  ``forever``: workers (``sshd -D``) run until deleted, the launcher until :class:`NcclLauncher` ends it;
* when the launcher Job is Complete (or Failed): JobSet ``terminalState`` and the TrainJob's
  ``Complete``/``Failed`` condition through their status subresources, and the still-active worker
  Job is deleted (foreground), as the JobSet controller cleans up a finished set.

Deletion is the real garbage collector's: TrainJob → JobSet and Secret → Jobs → pods by
ownerReferences (``blockOwnerDeletion``, so the check's foreground delete of the TrainJob returns only
once the pods are gone).

:class:`NcclLauncher` is the ``play`` of a :class:`~.controlplane_players.PodPlayer` for launcher
pods: once the launcher is Running it renders the ``all_reduce_perf`` log with the fake's generator
(:func:`aicr_pytest.testing.players.nccl.render_launcher_log`: the sweep the container's ``-b/-e/-f``
ask for, the ranks of the Running workers × ``numProcPerNode``, the GPU product of the workers' real
nodes, the transport the runtime's env selects); the PodPlayer scripts it as the pod's kwok ``Logs``
and ends the pod ``Succeeded``, after which the real Job controller completes the launcher Job.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import time
import urllib.error
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from tests.harness.controlplane_players import Poller, http_detail

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = ["LAUNCHER_SELECTOR", "NcclLauncher", "TrainerController"]

log = logging.getLogger("tests.harness.controlplane_trainer")
Obj = dict[str, Any]

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
TRAINJOB_NAME_LABEL = "trainer.kubeflow.org/trainjob-name"
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
LAUNCHER = "launcher"
NODE = "node"
SSH_VOLUME = "mpi-ssh-auth"
#: Pods of the JobSet's launcher replicatedJob (what :class:`NcclLauncher` plays).
LAUNCHER_SELECTOR = f"{JOBSET_NAME_LABEL},{REPLICATED_JOB_LABEL}={LAUNCHER}"


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _owner(obj: Obj, api_version: str, kind: str) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _condition(ctype: str, reason: str, message: str, *, status: str = "True") -> Obj:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": _now(),
    }


def _job_outcome(job: Obj) -> str | None:
    for cond in _dig(job, "status", "conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def _missing(e: urllib.error.HTTPError) -> bool:
    return e.code in (404, 409, 410)


class TrainerController(Poller):
    """Kubeflow Trainer + JobSet on the real apiserver (module docstring)."""

    name = "trainer-controller"

    def __init__(self, cp: ControlPlane, *, interval: float = 0.2) -> None:
        super().__init__(cp, interval=interval)
        self.reconciled: dict[str, str] = {}  # TrainJob uid -> "ns/name"
        self.finished: set[str] = set()  # JobSet "ns/name"

    # -- the loop ------------------------------------------------------------------------------------
    def tick(self) -> None:
        try:
            trainjobs = self.cp.get(f"/apis/{TRAINER_API}/trainjobs")["items"]
        except urllib.error.HTTPError as e:
            if e.code == 404:  # no Trainer CRDs on this cluster (another profile): nothing to play
                return
            raise
        for tj in trainjobs:
            meta = tj["metadata"]
            if meta.get("deletionTimestamp") or str(meta.get("uid")) in self.reconciled:
                continue
            where = f"TrainJob {meta['namespace']}/{meta['name']}"
            self.reconciled[str(meta.get("uid"))] = where  # once, as Trainer would not retry a bad spec
            self._quietly(where, self.reconcile, tj)
        if not self.reconciled:
            return
        jobs = self.cp.get(f"/apis/batch/v1/jobs?labelSelector={quote(JOBSET_NAME_LABEL)}")["items"]
        for job in jobs:
            if not job["metadata"].get("deletionTimestamp"):
                self._quietly(
                    f"Job {job['metadata']['namespace']}/{job['metadata']['name']}", self.progress, job
                )

    def _quietly(self, where: str, action: Callable[[Obj], None], obj: Obj) -> None:
        """``action(obj)``; an object that went away or changed under us (404/409/410) is no error."""
        try:
            action(obj)
        except urllib.error.HTTPError as e:
            if not _missing(e):
                self.errors.append(f"{where}: {http_detail(e)}")

    # -- Trainer: TrainJob -> Secret + JobSet ----------------------------------------------------------
    def reconcile(self, trainjob: Obj) -> None:
        meta = trainjob["metadata"]
        ns, name = str(meta["namespace"]), str(meta["name"])
        ref = _dig(trainjob, "spec", "runtimeRef") or {}
        kind = str(ref.get("kind") or "ClusterTrainingRuntime")
        plural = "trainingruntimes" if kind == "TrainingRuntime" else "clustertrainingruntimes"
        where = f"namespaces/{ns}/" if kind == "TrainingRuntime" else ""
        try:
            runtime: Obj = self.cp.get(f"/apis/{TRAINER_API}/{where}{plural}/{ref.get('name')}")
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
            message = f'{kind} "{ref.get("name")}" not found'
            self._status(
                TRAINER_API,
                "trainjobs",
                ns,
                name,
                {"conditions": [_condition("Created", "JobsBuildFailed", message, status="False")]},
            )
            return
        labels = dict(meta.get("labels") or {})
        owner = _owner(trainjob, TRAINER_API, "TrainJob")
        secret = f"{name}-mpi-ssh"
        self._create(
            f"/api/v1/namespaces/{ns}/secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": ns, "labels": labels, "ownerReferences": [owner]},
                "type": "Opaque",
                "data": {
                    key: base64.b64encode(f"aicr-test {key}\n".encode()).decode()
                    for key in ("id_rsa", "id_rsa.pub", "authorized_keys")
                },
            },
        )
        rjobs = [
            j
            for j in _dig(runtime, "spec", "template", "spec", "replicatedJobs") or []
            if isinstance(j, dict)
        ]
        for rj in rjobs:
            _add_ssh_volume(rj, secret)
        jobset = self._create(
            f"/apis/{JOBSET_API}/namespaces/{ns}/jobsets",
            {
                "apiVersion": JOBSET_API,
                "kind": "JobSet",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {**labels, TRAINJOB_NAME_LABEL: name},
                    "ownerReferences": [owner],
                },
                "spec": {
                    "network": _dig(runtime, "spec", "template", "spec", "network") or {},
                    "successPolicy": _dig(runtime, "spec", "template", "spec", "successPolicy") or {},
                    "replicatedJobs": rjobs,
                },
            },
        )
        num_nodes = int(
            _dig(trainjob, "spec", "trainer", "numNodes")
            or _dig(runtime, "spec", "mlPolicy", "numNodes")
            or 1
        )
        has_workers = any(j.get("name") == NODE for j in rjobs)
        for rj in rjobs:
            self._create_job(
                jobset, rj, num_nodes, labels, suspend=rj.get("name") == LAUNCHER and has_workers
            )
        self._status(
            TRAINER_API,
            "trainjobs",
            ns,
            name,
            {"conditions": [_condition("Created", "JobsCreated", "TrainJob Jobs are created")]},
        )

    def _create_job(
        self, jobset: Obj, rj: Obj, num_nodes: int, labels: Mapping[str, str], *, suspend: bool
    ) -> None:
        from aicr_pytest.testing.players.nccl import replicated_job
        from tests.harness.controlplane import RUN_FOR_ANNOTATION

        ns = jobset["metadata"]["namespace"]
        # kwok: workers (sshd) run until deleted; the launcher until NcclLauncher ends it.
        job = replicated_job(
            jobset,
            rj,
            num_nodes,
            labels,
            suspend=suspend,
            owner=_owner(jobset, JOBSET_API, "JobSet"),
            pod_annotations={RUN_FOR_ANNOTATION: "forever"},
        )
        self._create(f"/apis/batch/v1/namespaces/{ns}/jobs", job)

    # -- JobSet: launcher after the workers, terminal state ------------------------------------------
    def progress(self, job: Obj) -> None:
        meta = job["metadata"]
        labels = meta.get("labels") or {}
        ns, jsname, rname = (
            str(meta["namespace"]),
            labels.get(JOBSET_NAME_LABEL),
            labels.get(REPLICATED_JOB_LABEL),
        )
        if not jsname or f"{ns}/{jsname}" in self.finished:
            return
        jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
        if rname == NODE:
            ready = int(_dig(job, "status", "ready") or 0)
            if ready >= int(_dig(job, "spec", "parallelism") or 1):
                launcher = f"{jobs}/{jsname}-{LAUNCHER}-0"
                with contextlib.suppress(urllib.error.HTTPError):
                    if _dig(self.cp.get(launcher), "spec", "suspend"):
                        self.cp.request(
                            "PATCH",
                            launcher,
                            {"spec": {"suspend": False}},
                            content_type="application/merge-patch+json",
                        )
        elif rname == LAUNCHER:
            outcome = _job_outcome(job)
            if outcome is not None:
                self.finish(ns, jsname, outcome == "Complete")

    def finish(self, ns: str, jsname: str, ok: bool) -> None:
        from aicr_pytest.testing.players.nccl import jobset_terminal_status, trainjob_terminal_status

        now = _now()
        self._status(JOBSET_API, "jobsets", ns, jsname, jobset_terminal_status(ok, now))
        self._status(TRAINER_API, "trainjobs", ns, jsname, trainjob_terminal_status(ok, now))
        self.finished.add(f"{ns}/{jsname}")
        # A finished JobSet deletes its still-active child Jobs (the sshd workers), foreground.
        with contextlib.suppress(urllib.error.HTTPError):
            self.cp.request(
                "DELETE",
                f"/apis/batch/v1/namespaces/{ns}/jobs/{jsname}-{NODE}-0",
                {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
            )

    # -- helpers ---------------------------------------------------------------------------------------
    def _create(self, collection: str, body: Obj) -> Obj:
        try:
            created: Obj = self.cp.request("POST", collection, body)
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
            created = self.cp.get(f"{collection}/{body['metadata']['name']}")
        return created

    def _status(self, api_version: str, plural: str, ns: str, name: str, status: Obj) -> None:
        self.cp.request(
            "PATCH",
            f"/apis/{api_version}/namespaces/{ns}/{plural}/{name}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )


def _add_ssh_volume(rj: Obj, secret: str) -> None:
    """What Trainer's MPI plugin adds: the ``mpi-ssh-auth`` Secret volume the runtime's containers mount."""
    spec = _dig(rj, "template", "spec", "template", "spec")
    if not isinstance(spec, dict):
        return
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    mounted = {m.get("name") for c in containers for m in c.get("volumeMounts") or []}
    volumes = spec.setdefault("volumes", [])
    if SSH_VOLUME in mounted and all(v.get("name") != SSH_VOLUME for v in volumes):
        volumes.append(
            {
                "name": SSH_VOLUME,
                "secret": {
                    "secretName": secret,
                    "items": [
                        {"key": "id_rsa", "path": "id_rsa"},
                        {"key": "id_rsa.pub", "path": "id_rsa.pub"},
                        {"key": "authorized_keys", "path": "authorized_keys"},
                    ],
                },
            }
        )


class NcclLauncher:
    """The ``play`` of a :class:`~.controlplane_players.PodPlayer` for launcher pods: the NCCL log."""

    def __init__(self, cp: ControlPlane, faults: Callable[[], Sequence[str]] = tuple) -> None:
        self.cp = cp
        #: the seeded profile's faults (``nccl-slow-node``, the bandwidth faults)
        self.faults = faults

    def __call__(self, pod: Obj, node: Obj) -> dict[str, tuple[str, int]]:
        from aicr_pytest.testing.players import nccl as player

        meta = pod["metadata"]
        ns, jsname = str(meta["namespace"]), str((meta.get("labels") or {}).get(JOBSET_NAME_LABEL))
        containers = _dig(pod, "spec", "containers") or []
        container = next(
            (c for c in containers if c.get("name") == NODE), containers[0] if containers else None
        )
        spec = player.LauncherSpec.from_container(container)
        workers, product, nodes = self._workers(ns, jsname)
        slow = player.slow_node_sets(self.faults(), self.cp.get("/api/v1/nodes")["items"])
        text_head, rows, trailer = player.render_launcher_log(
            jobset=jsname,
            spec=spec,
            workers=workers,
            procs_per_node=self._procs_per_node(ns, jsname),
            product=product,
            peak_gbps=player.peak_busbw(product, spec)
            * player.bandwidth_factor(nodes, slow)
            * player.fault_factor(self.faults()),
            network=spec.network,
            seed=f"{ns}/{jsname}",
        )
        text = text_head + "".join(row + "\n" for row in rows) + trailer
        return {str((container or {}).get("name") or NODE): (text, 0)}

    def _workers(self, ns: str, jsname: str) -> tuple[list[str], str, set[str]]:
        """Running worker hostnames (completion-index order), the GPU product and the names of
        their nodes."""
        selector = quote(f"{JOBSET_NAME_LABEL}={jsname},{REPLICATED_JOB_LABEL}={NODE}")
        pods = [
            p
            for p in self.cp.get(f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
            if _dig(p, "status", "phase") == "Running"
        ]
        pods.sort(
            key=lambda p: int((p["metadata"].get("annotations") or {}).get(COMPLETION_INDEX_ANNOTATION, 0))
        )
        hosts = [str(_dig(p, "spec", "hostname") or p["metadata"]["name"]) for p in pods]
        product = ""
        for p in pods:
            node_name = _dig(p, "spec", "nodeName")
            if node_name:
                labels = _dig(self.cp.get(f"/api/v1/nodes/{node_name}"), "metadata", "labels") or {}
                product = str(labels.get("nvidia.com/gpu.product") or "")
                if product:
                    break
        return hosts, product, {str(_dig(p, "spec", "nodeName") or "") for p in pods}

    def _procs_per_node(self, ns: str, jsname: str) -> int:
        try:
            tj = self.cp.get(f"/apis/{TRAINER_API}/namespaces/{ns}/trainjobs/{jsname}")
            ref = _dig(tj, "spec", "runtimeRef") or {}
            kind = str(ref.get("kind") or "ClusterTrainingRuntime")
            if kind == "TrainingRuntime":
                path = f"/apis/{TRAINER_API}/namespaces/{ns}/trainingruntimes/{ref.get('name')}"
            else:
                path = f"/apis/{TRAINER_API}/clustertrainingruntimes/{ref.get('name')}"
            procs = _dig(self.cp.get(path), "spec", "mlPolicy", "mpi", "numProcPerNode")
            return max(1, int(procs)) if procs else 1
        except (urllib.error.HTTPError, TypeError, ValueError):
            return 1
