"""Kueue player: Kueue's Job integration and quota admission, for gang-scheduling's Kueue path.

Plays only where the profile runs Kueue (fault ``kueue-gang``: Kueue instead of KAI, or
``gang-partial-admission``). It installs Kueue's CRDs (``kueue.x-k8s.io/v1beta2`` ResourceFlavor,
ClusterQueue, LocalQueue, Workload) and, one clock second after a suspended Job labelled
``kueue.x-k8s.io/queue-name`` is created, creates its Workload (label ``kueue.x-k8s.io/job-uid``)
and admits it -- ``status.admission`` set and the Job unsuspended, so the Job controller creates its
pods -- only when the LocalQueue's ClusterQueue has CPU quota for the whole Job (all or nothing).

Faults (``profile.faults``):

* ``kueue-gang`` -- the cluster runs Kueue instead of KAI (healthy);
* ``gang-partial-admission`` -- Kueue ignores the quota: a Job that does not fit is admitted and
  unsuspended anyway, so some of its pods are scheduled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.builders import crd, crd_established
from aicr_pytest.testing.simulator import Simulator, parse_quantity
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = ["FAULT_KUEUE", "FAULT_PARTIAL", "install", "job_cpu", "queue_cpu"]

FAULT_KUEUE = "kueue-gang"
FAULT_PARTIAL = "gang-partial-admission"
API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
UID_LABEL = "kueue.x-k8s.io/job-uid"
ADMIT_AFTER_S = 1.0


def job_cpu(job: Mapping[str, Any]) -> float:
    """The CPU the whole Job asks for: parallelism times its pod's requests."""
    spec = job.get("spec") or {}
    pod = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    per_pod = sum(
        parse_quantity(((c.get("resources") or {}).get("requests") or {}).get("cpu", 0)) for c in pod
    )
    return per_pod * int(spec.get("parallelism") or 1)


def queue_cpu(cluster_queue: Mapping[str, Any]) -> float:
    """The ClusterQueue's nominal CPU quota over all flavors."""
    total = 0.0
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                if res.get("name") == "cpu":
                    total += parse_quantity(res.get("nominalQuota", 0))
    return total


def _admit(sim: Simulator, job: Obj, partial: bool) -> None:
    meta = job["metadata"]
    ns, name, uid = str(meta.get("namespace") or ""), str(meta["name"]), str(meta["uid"])
    queue = str((meta.get("labels") or {}).get(QUEUE_LABEL) or "")
    lq = sim.store.peek(sim.rt(API, "LocalQueue"), ns, queue)
    cq_name = str(((lq or {}).get("spec") or {}).get("clusterQueue") or "")
    cq = sim.store.peek(sim.rt(API, "ClusterQueue"), None, cq_name) if cq_name else None
    workloads = sim.rt(API, "Workload")
    created = sim.store.create(
        workloads,
        ns,
        {
            "apiVersion": API,
            "kind": "Workload",
            "metadata": {"name": f"job-{name}-{uid[:5]}", "namespace": ns, "labels": {UID_LABEL: uid}},
            "spec": {"queueName": queue},
        },
    )
    if cq is None:
        return  # no queue: Kueue leaves the Workload pending
    used = sum(
        float(((w.get("status") or {}).get("admission") or {}).get("cpu") or 0)
        for w in sim.store.iter_objects(workloads, None)
    )
    need = job_cpu(job)
    if not partial and used + need > queue_cpu(cq) + 1e-9:
        return  # does not fit wholly: stays unadmitted, the Job suspended
    wl_name = str(created["metadata"]["name"])
    sim.set_status(API, "Workload", wl_name, {"admission": {"clusterQueue": cq_name, "cpu": need}}, ns)

    def unsuspend(obj: Obj) -> None:
        obj.setdefault("spec", {})["suspend"] = False

    sim.store.mutate(sim.rt("batch/v1", "Job"), ns, name, unsuspend)


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Kueue's CRDs and its admission, where the profile runs Kueue."""
    faults = frozenset(profile.faults)
    if FAULT_KUEUE not in faults and FAULT_PARTIAL not in faults:
        return
    partial = FAULT_PARTIAL in faults
    for plural, kind, namespaced in (
        ("resourceflavors", "ResourceFlavor", False),
        ("clusterqueues", "ClusterQueue", False),
        ("localqueues", "LocalQueue", True),
        ("workloads", "Workload", True),
    ):
        crd_established(fc, crd("kueue.x-k8s.io", plural, kind, ["v1beta2"], namespaced=namespaced))
    sim = fc.sim

    def on_job(sim: Simulator, job: Obj) -> None:
        labels = (job.get("metadata") or {}).get("labels") or {}
        if labels.get(QUEUE_LABEL) and (job.get("spec") or {}).get("suspend"):
            sim.clock.call_later(ADMIT_AFTER_S, lambda: _admit(sim, job, partial))

    sim.on_create("batch", "v1", "jobs", on_job)
