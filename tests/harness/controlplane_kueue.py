"""Kueue on the real control plane: its Job integration and all-or-nothing quota admission.

The harness runs no Kueue. Where the seeded profile runs Kueue (faults ``kueue-gang`` and
``gang-partial-admission``, :func:`aicr_pytest.testing.players.kueue.plays_kueue`), the profile's
objects carry Kueue's CRDs (the fake's kueue player installs them; seeding copies them, and a switch
to a profile without Kueue deletes them again, :func:`tests.harness.backends.plan_convergence`) and
:class:`KueueController` plays Kueue with the fake player's rules: for every suspended Job labelled
``kueue.x-k8s.io/queue-name`` it creates the Workload
(:func:`~aicr_pytest.testing.players.kueue.workload_for`) and, when the LocalQueue's ClusterQueue
has CPU quota for the whole Job next to the Workloads it already admitted, writes
``status.admission`` and unsuspends the Job. The real Job controller then creates the pods, the
real scheduler binds them to kwok's nodes. A Job that does not fit is re-evaluated every tick, as
Kueue requeues it. Under ``gang-partial-admission`` the quota is ignored.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aicr_pytest.testing.players import kueue
from tests.harness.controlplane_players import Poller, http_detail, vanished

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = ["KueueController"]

Obj = dict[str, Any]
Faults = Callable[[], Iterable[str]]
MERGE = "application/merge-patch+json"
BASE = f"/apis/{kueue.API}"


class KueueController(Poller):
    """Kueue's Job integration and quota admission (module docstring)."""

    name = "kueue-controller"

    def __init__(self, cp: ControlPlane, faults: Faults, *, interval: float = 0.2) -> None:
        super().__init__(cp, interval=interval)
        self.faults = faults
        #: "namespace/job" -> the Workload admitted for it, every admission made
        self.admitted: dict[str, str] = {}

    def _get(self, path: str) -> Obj | None:
        try:
            found: Obj = self.cp.get(path)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        return found

    def tick(self) -> None:
        faults = tuple(self.faults())
        if not kueue.plays_kueue(faults):
            return
        jobs = self.cp.get("/apis/batch/v1/jobs?labelSelector=" + quote(kueue.QUEUE_LABEL))["items"]
        pending = [
            j
            for j in jobs
            if (j.get("spec") or {}).get("suspend") is True and not j["metadata"].get("deletionTimestamp")
        ]
        if not pending:
            return
        workloads: list[Obj] = self.cp.get(f"{BASE}/workloads")["items"]
        for job in sorted(pending, key=lambda j: str(j["metadata"].get("creationTimestamp"))):
            self._play(job, workloads, ignore_quota=kueue.FAULT_PARTIAL in faults)

    def _play(self, job: Obj, workloads: list[Obj], *, ignore_quota: bool) -> None:
        meta = job["metadata"]
        ns, name, uid = str(meta["namespace"]), str(meta["name"]), str(meta["uid"])
        job_path = f"/apis/batch/v1/namespaces/{ns}/jobs/{name}"
        mine = [w for w in workloads if (w["metadata"].get("labels") or {}).get(kueue.UID_LABEL) == uid]
        if mine:
            workload = mine[0]
        else:
            try:
                path = f"{BASE}/namespaces/{ns}/workloads"
                workload = self.cp.request("POST", path, kueue.workload_for(job))
            except urllib.error.HTTPError as e:
                if vanished(self.cp, job_path):
                    return  # the test deleted the Job (or its namespace) meanwhile
                detail = http_detail(e)
                if e.code == 403 and "being terminated" in detail:
                    return  # its namespace is being deleted (the check's cleanup): Kueue skips it too
                raise RuntimeError(f"creating the Workload of Job {ns}/{name}: {detail}") from e
            workloads.append(workload)
        if (workload.get("status") or {}).get("admission"):
            return
        queue = str((meta.get("labels") or {}).get(kueue.QUEUE_LABEL) or "")
        local = self._get(f"{BASE}/namespaces/{ns}/localqueues/{quote(queue)}")
        cq_name = str(((local or {}).get("spec") or {}).get("clusterQueue") or "")
        cq = self._get(f"{BASE}/clusterqueues/{quote(cq_name)}") if cq_name else None
        if cq is None:
            return  # no queue: the Workload stays pending
        used = kueue.admitted_cpu(workloads, cq_name)
        if not kueue.admits(used, kueue.job_cpu(job), kueue.queue_cpu(cq), ignore_quota=ignore_quota):
            return  # does not fit wholly: stays unadmitted, the Job suspended
        wl_name = str(workload["metadata"]["name"])
        status = {"status": {"admission": kueue.admission(cq, job)}}
        try:
            admitted = self.cp.request(
                "PATCH", f"{BASE}/namespaces/{ns}/workloads/{wl_name}/status", status, content_type=MERGE
            )
            self.cp.request("PATCH", job_path, {"spec": {"suspend": False}}, content_type=MERGE)
        except urllib.error.HTTPError as e:
            if vanished(self.cp, job_path):
                return
            raise RuntimeError(f"admitting Workload {ns}/{wl_name}: {http_detail(e)}") from e
        workload.clear()
        workload.update(admitted)
        self.admitted[f"{ns}/{name}"] = wl_name
