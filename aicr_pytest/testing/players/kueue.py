"""Kueue player: Kueue's Job integration and quota admission, for gang-scheduling's Kueue path.

Plays only where the profile runs Kueue (fault ``kueue-gang``: Kueue instead of KAI, or
``gang-partial-admission``). It installs Kueue's CRDs (``kueue.x-k8s.io/v1beta2`` ResourceFlavor,
ClusterQueue, LocalQueue, Workload; our own minimal schemas of the fields the check and this player
use, :func:`kueue_crds`) and, one clock second after a suspended Job labelled
``kueue.x-k8s.io/queue-name`` is created, creates its Workload (label ``kueue.x-k8s.io/job-uid``,
:func:`workload_for`) and admits it -- ``status.admission`` set (:func:`admission`) and the Job
unsuspended, so the Job controller creates its pods -- only when the LocalQueue's ClusterQueue has
CPU quota for the whole Job next to the Workloads it already admitted (all or nothing,
:func:`admits`). The control-plane backend's Kueue controller (``tests/harness``) plays the same rules
with these functions against a real apiserver.

Faults (``profile.faults``):

* ``kueue-gang`` -- the cluster runs Kueue instead of KAI (healthy);
* ``gang-partial-admission`` -- Kueue ignores the quota: a Job that does not fit is admitted and
  unsuspended anyway, so some of its pods are scheduled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aicr_pytest.testing.builders import crd, crd_established
from aicr_pytest.testing.simulator import Simulator, parse_quantity
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = [
    "FAULT_KUEUE",
    "FAULT_PARTIAL",
    "admission",
    "admits",
    "admitted_cpu",
    "install",
    "job_cpu",
    "kueue_crds",
    "plays_kueue",
    "queue_cpu",
    "workload_for",
]

FAULT_KUEUE = "kueue-gang"
FAULT_PARTIAL = "gang-partial-admission"
GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
API = f"{GROUP}/{VERSION}"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
UID_LABEL = "kueue.x-k8s.io/job-uid"
ADMIT_AFTER_S = 1.0

_STR: dict[str, Any] = {"type": "string"}
_QUANTITY: dict[str, Any] = {"x-kubernetes-int-or-string": True}
_OPEN: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def _list(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": dict(item)}


def _map(value: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": dict(value)}


#: (plural, kind, namespaced, spec schema, status schema): only the fields gang-scheduling's
#: Kueue test and this player read or write
_KINDS: tuple[tuple[str, str, bool, dict[str, Any], dict[str, Any]], ...] = (
    ("resourceflavors", "ResourceFlavor", False, _obj(nodeLabels=_map(_STR)), _OPEN),
    (
        "clusterqueues",
        "ClusterQueue",
        False,
        _obj(
            namespaceSelector=_OPEN,
            resourceGroups=_list(
                _obj(
                    coveredResources=_list(_STR),
                    flavors=_list(_obj(name=_STR, resources=_list(_obj(name=_STR, nominalQuota=_QUANTITY)))),
                )
            ),
        ),
        _OPEN,
    ),
    ("localqueues", "LocalQueue", True, _obj(clusterQueue=_STR), _OPEN),
    (
        "workloads",
        "Workload",
        True,
        _obj(queueName=_STR, podSets=_list(_obj(name=_STR, count={"type": "integer"}, template=_OPEN))),
        _obj(
            admission=_obj(
                clusterQueue=_STR,
                podSetAssignments=_list(
                    _obj(
                        name=_STR,
                        count={"type": "integer"},
                        flavors=_map(_STR),
                        resourceUsage=_map(_QUANTITY),
                    )
                ),
            )
        ),
    ),
)


def kueue_crds() -> list[Obj]:
    """Kueue's four CRDs with structural schemas of the fields used here (status subresource on)."""
    out: list[Obj] = []
    for plural, kind, namespaced, spec_schema, status_schema in _KINDS:
        obj = crd(GROUP, plural, kind, [VERSION], namespaced=namespaced)
        obj["spec"]["versions"][0]["schema"] = {
            "openAPIV3Schema": _obj(
                apiVersion=_STR,
                kind=_STR,
                metadata={"type": "object"},
                spec=spec_schema,
                status=status_schema,
            )
        }
        out.append(obj)
    return out


def plays_kueue(faults: Iterable[str]) -> bool:
    """Whether a profile with ``faults`` runs Kueue (and so installs its CRDs)."""
    found = frozenset(faults)
    return FAULT_KUEUE in found or FAULT_PARTIAL in found


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


def _flavor(cluster_queue: Mapping[str, Any]) -> str:
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            return str(flavor.get("name") or "")
    return ""


def admitted_cpu(workloads: Iterable[Mapping[str, Any]], cluster_queue: str) -> float:
    """The CPU that ``cluster_queue``'s admitted Workloads hold (their ``resourceUsage``)."""
    total = 0.0
    for wl in workloads:
        adm = (wl.get("status") or {}).get("admission") or {}
        if adm.get("clusterQueue") != cluster_queue:
            continue
        for assignment in adm.get("podSetAssignments") or []:
            total += parse_quantity((assignment.get("resourceUsage") or {}).get("cpu", 0))
    return total


def admits(used: float, need: float, quota: float, *, ignore_quota: bool = False) -> bool:
    """Kueue's all-or-nothing admission: the whole gang fits next to what is admitted, or nothing."""
    return ignore_quota or used + need <= quota + 1e-9


def workload_for(job: Mapping[str, Any]) -> Obj:
    """The Workload Kueue's Job integration creates for ``job`` (found by its ``job-uid`` label)."""
    meta = job.get("metadata") or {}
    name, uid = str(meta["name"]), str(meta["uid"])
    spec = job.get("spec") or {}
    return {
        "apiVersion": API,
        "kind": "Workload",
        "metadata": {
            "name": f"job-{name}-{uid[:5]}",
            "namespace": str(meta.get("namespace") or ""),
            "labels": {UID_LABEL: uid},
        },
        "spec": {
            "queueName": str((meta.get("labels") or {}).get(QUEUE_LABEL) or ""),
            "podSets": [{"name": "main", "count": int(spec.get("parallelism") or 1)}],
        },
    }


def admission(cluster_queue: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """``status.admission`` of ``job``'s Workload admitted to ``cluster_queue``."""
    count = int((job.get("spec") or {}).get("parallelism") or 1)
    return {
        "clusterQueue": str((cluster_queue.get("metadata") or {}).get("name") or ""),
        "podSetAssignments": [
            {
                "name": "main",
                "count": count,
                "flavors": {"cpu": _flavor(cluster_queue)},
                "resourceUsage": {"cpu": f"{round(job_cpu(job) * 1000)}m"},
            }
        ],
    }


def _admit(sim: Simulator, job: Obj, partial: bool) -> None:
    meta = job["metadata"]
    ns, name = str(meta.get("namespace") or ""), str(meta["name"])
    queue = str((meta.get("labels") or {}).get(QUEUE_LABEL) or "")
    lq = sim.store.peek(sim.rt(API, "LocalQueue"), ns, queue)
    cq_name = str(((lq or {}).get("spec") or {}).get("clusterQueue") or "")
    cq = sim.store.peek(sim.rt(API, "ClusterQueue"), None, cq_name) if cq_name else None
    workloads = sim.rt(API, "Workload")
    created = sim.store.create(workloads, ns, workload_for(job))
    if cq is None:
        return  # no queue: Kueue leaves the Workload pending
    used = admitted_cpu(sim.store.iter_objects(workloads, None), cq_name)
    if not admits(used, job_cpu(job), queue_cpu(cq), ignore_quota=partial):
        return  # does not fit wholly: stays unadmitted, the Job suspended
    wl_name = str(created["metadata"]["name"])
    sim.set_status(API, "Workload", wl_name, {"admission": admission(cq, job)}, ns)

    def unsuspend(obj: Obj) -> None:
        obj.setdefault("spec", {})["suspend"] = False

    sim.store.mutate(sim.rt("batch/v1", "Job"), ns, name, unsuspend)


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Kueue's CRDs and its admission, where the profile runs Kueue."""
    if not plays_kueue(profile.faults):
        return
    partial = FAULT_PARTIAL in frozenset(profile.faults)
    for obj in kueue_crds():
        crd_established(fc, obj)

    def on_job(sim: Simulator, job: Obj) -> None:
        labels = (job.get("metadata") or {}).get("labels") or {}
        if labels.get(QUEUE_LABEL) and (job.get("spec") or {}).get("suspend"):
            sim.clock.call_later(ADMIT_AFTER_S, lambda: _admit(sim, job, partial))

    sim = fc.sim
    sim.on_create("batch", "v1", "jobs", on_job)
