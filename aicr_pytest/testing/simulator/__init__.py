"""A deterministic "kwok-lite" GPU-cluster simulator on top of the fake store.

Controllers run synchronously, in the writing thread, after every write to the store (they are
store listeners) and from clock timers; nothing sleeps. With a :class:`FakeClock`, a scenario
advances only when the test calls ``clock.advance(...)``.

What is simulated:

* **Nodes** from :class:`NodeProfile` (instance type, GFD labels ``nvidia.com/gpu.product``,
  ``nvidia.com/gpu.count``..., allocatable ``nvidia.com/gpu``/cpu/memory/extra resources, taints,
  ``Ready`` condition, cordon = ``spec.unschedulable``).
* **Scheduler** (``default-scheduler``, plus any name added to :attr:`Simulator.schedulers`, e.g.
  ``kai-scheduler`` when the profile installs KAI): binds Pending pods to nodes passing, in the
  kube-scheduler's filter order, NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector
  and required node affinity) and NodeResourcesFit (requests incl. extended resources such as
  ``nvidia.com/gpu``, counting non-terminal pods already bound); otherwise the pod stays Pending
  with ``PodScheduled=False reason=Unschedulable`` and a ``FailedScheduling`` Event whose message
  has the kube-scheduler's shape (``0/5 nodes are available: ...``). Among feasible nodes it picks
  the least allocated one (most free of the requested GPUs, then fewest pods, then name).
* **Kubelet**: a bound pod goes ``ContainerCreating`` -> ``Running`` -> ``Succeeded``/``Failed``
  on the timeline of the first matching :class:`PodScript` (delays in clock seconds, container
  logs, exit code, termination reason such as ``OOMKilled``/``Error``, termination message,
  ``waiting_reason`` for pods that never start, crash loops). Pods with ``restartPolicy: Always``
  and no script run forever; Job-style pods without a script succeed after one second.
* **Job controller** (batch/v1): creates pods from the template (``job-name``,
  ``batch.kubernetes.io/job-name``, ``controller-uid`` labels, ownerReferences, Indexed mode
  completion index), keeps ``status.active/ready/succeeded/failed/startTime/completionTime``
  and the ``SuccessCriteriaMet``/``Complete`` or ``FailureTarget``/``Failed`` conditions
  (``BackoffLimitExceeded``, ``DeadlineExceeded`` for ``activeDeadlineSeconds``).
* **Hooks** for custom-resource controllers: ``sim.on_create(group, version, plural, cb)``
  (also ``on_update``/``on_delete``), with helpers (:meth:`Simulator.create_pod`,
  :meth:`Simulator.set_status`) so a test can say "when a TrainJob is created, create launcher
  and worker pods with this log".
* **Status helpers** for DaemonSets and Deployments (:meth:`set_daemonset_status`,
  :meth:`set_deployment_status`); those workloads are not reconciled (profiles seed their pods).

Gaps (documented, by design): no preemption, no pod affinity/anti-affinity or topology spread,
no init-container timeline (init containers are reported completed), Job pod failure backoff is
immediate, ``OnFailure`` Job pods that fail are marked Failed rather than restarted in place, no
ReplicaSet/DaemonSet/StatefulSet controllers, no node heartbeats/eviction.

Checks that land later extend the simulator (new scripts, hooks, profile components) so that
every check passes on the healthy profile and fails the way a real cluster would under each fault.
"""

from __future__ import annotations

from collections.abc import Callable

from aicr_pytest.testing.simulator.jobs import _JobController
from aicr_pytest.testing.simulator.kubelet import _Kubelet
from aicr_pytest.testing.simulator.nodes import NodeProfile, parse_quantity
from aicr_pytest.testing.simulator.pods import TERMINAL, PodScript, pod_requests, selector_matches
from aicr_pytest.testing.simulator.scheduler import _Scheduler
from aicr_pytest.testing.store import Obj, Store, WatchEvent, clone

__all__ = [
    "TERMINAL",
    "Hook",
    "NodeProfile",
    "PodScript",
    "Simulator",
    "parse_quantity",
    "pod_requests",
    "selector_matches",
]

Hook = Callable[["Simulator", Obj], None]


class Simulator(_Scheduler, _Kubelet, _JobController):
    """Controllers over a :class:`Store`; see the module docstring."""

    def __init__(self, store: Store, *, enabled: bool = True) -> None:
        super().__init__(store, enabled=enabled)
        self._hooks: dict[tuple[str, str, str], list[Hook]] = {}
        store.add_listener(self._on_event)

    def on_create(self, group: str, version: str, plural: str, callback: Hook) -> None:
        """``callback(sim, obj)`` after an object of ``group/version plural`` is created.

        Hooks see objects of any served version of the resource (``version`` documents intent).
        """
        self._hooks.setdefault(("ADDED", group, plural), []).append(callback)

    def on_update(self, group: str, version: str, plural: str, callback: Hook) -> None:
        self._hooks.setdefault(("MODIFIED", group, plural), []).append(callback)

    def on_delete(self, group: str, version: str, plural: str, callback: Hook) -> None:
        self._hooks.setdefault(("DELETED", group, plural), []).append(callback)

    # ---------------------------------------------------------------------------- dispatch --
    def _on_event(self, ev: WatchEvent) -> None:
        if not self.enabled:
            return
        group, plural = ev.storage_key
        for cb in self._hooks.get((ev.type, group, plural), []):
            cb(self, clone(ev.obj))
        if ev.storage_key == ("", "pods"):
            self._on_pod(ev)
        elif ev.storage_key == ("batch", "jobs"):
            if ev.type != "DELETED":
                self._sync_job(ev.obj["metadata"].get("namespace", ""), ev.obj["metadata"]["name"])
        elif ev.storage_key == ("", "nodes"):
            self.schedule_pending()

    def _on_pod(self, ev: WatchEvent) -> None:
        meta = ev.obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        spec = ev.obj.get("spec") or {}
        phase = (ev.obj.get("status") or {}).get("phase")
        if ev.type == "DELETED":
            self._pending.pop(key, None)
            self._started.discard(meta.get("uid", ""))
            self._sync_owner_job(ev.obj)
            self.schedule_pending()
            return
        if not spec.get("nodeName"):
            if ev.type == "ADDED" and phase not in TERMINAL and not meta.get("deletionTimestamp"):
                self._pending[key] = None
                self.schedule_pending()
            return
        self._pending.pop(key, None)
        uid = meta.get("uid", "")
        if (
            uid not in self._started
            and phase == "Pending"
            and not (ev.obj.get("status") or {}).get("containerStatuses")
        ):
            self._started.add(uid)
            self._kubelet_start(ev.obj)
        old_phase = ((ev.old or {}).get("status") or {}).get("phase")
        if phase != old_phase:
            self._sync_owner_job(ev.obj)
            if phase in TERMINAL:
                self.schedule_pending()
        elif ((ev.old or {}).get("status") or {}).get("conditions") != (ev.obj.get("status") or {}).get(
            "conditions"
        ):
            self._sync_owner_job(ev.obj)
