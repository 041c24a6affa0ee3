"""The simulator's shared state, configuration (nodes, pod scripts) and helper API (pods, status, events)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.simulator.nodes import NodeProfile
from aicr_pytest.testing.simulator.pods import PodScript
from aicr_pytest.testing.store import Obj, Store, clone


class _SimulatorBase:
    """State shared by the controllers, and the configuration and helper API of :class:`Simulator`."""

    def __init__(self, store: Store, *, enabled: bool = True) -> None:
        self.store = store
        self.clock = store.clock
        self.enabled = enabled
        self.schedulers: set[str] = {"default-scheduler"}
        #: predicates over pending pods that a player schedules itself (e.g. KAI gangs): skipped here
        self.defer_scheduling: list[Callable[[Obj], bool]] = []
        self.scripts: list[PodScript] = []
        self.default_job_script = PodScript(start_after=1.0, run_for=1.0)
        self.default_service_script = PodScript(start_after=1.0, run_for=None)
        self._pending: dict[tuple[str, str], None] = {}  # unscheduled pods, in arrival order
        self._started: set[str] = set()  # pod uids whose kubelet timeline started
        self._event_seq = 0
        self._rt: dict[str, ResourceType] = {}
        #: (which pods, change to each container status) for statuses a real kubelet would not
        #: report (tests of proof of execution: an empty imageID, no startedAt); applied whenever
        #: the kubelet writes the pod's container statuses
        self.status_tampers: list[tuple[Callable[[Obj], bool], Callable[[Obj], None]]] = []

    def rt(self, api_version: str, kind: str) -> ResourceType:
        key = f"{api_version}/{kind}"
        cached = self._rt.get(key)
        if cached is None or self.store.resource(cached.group, cached.version, cached.plural) is None:
            cached = self._rt[key] = self.store.resolve(api_version, kind)
        return cached

    # ------------------------------------------------------------------------ configuration --
    def add_nodes(self, profile: NodeProfile, start_index: int = 0) -> list[Obj]:
        """Create ``profile.count`` nodes (``<prefix>-<i>``)."""
        return [self.store.add(profile.build(start_index + i)) for i in range(profile.count)]

    def tamper_container_statuses(self, pods: Callable[[Obj], bool], change: Callable[[Obj], None]) -> None:
        """Apply ``change`` to every container status of the pods ``pods`` accepts, each time the
        kubelet writes them (see :attr:`status_tampers`)."""
        self.status_tampers.append((pods, change))

    def _tamper(self, pod: Obj) -> None:
        for accepts, change in self.status_tampers:
            if accepts(pod):
                for cs in (pod.get("status") or {}).get("containerStatuses") or []:
                    change(cs)

    def script(self, script: PodScript | None = None, **kwargs: Any) -> PodScript:
        """Register a :class:`PodScript` (or build one from kwargs); later scripts win."""
        s = script or PodScript(**kwargs)
        self.scripts.insert(0, s)
        return s

    # -------------------------------------------------------------------------- helpers API --
    def create_pod(
        self,
        namespace: str,
        name: str,
        *,
        containers: Sequence[Obj] | None = None,
        labels: Mapping[str, str] | None = None,
        owner: Obj | None = None,
        node_name: str | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: Sequence[Obj] | None = None,
        gpus: int = 0,
        restart_policy: str = "Never",
        script: PodScript | None = None,
        scheduler_name: str | None = None,
    ) -> Obj:
        """Create a pod as a controller would (owner reference, optional script bound to it)."""
        if containers is None:
            res: Obj = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
            containers = [{"name": "main", "image": "registry.example/aicr/sim:latest", "resources": res}]
        meta: Obj = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
        if owner is not None:
            ometa = owner["metadata"]
            meta["ownerReferences"] = [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": ometa["name"],
                    "uid": ometa["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        spec: Obj = {"containers": [clone(c) for c in containers], "restartPolicy": restart_policy}
        if node_name:
            spec["nodeName"] = node_name
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            spec["tolerations"] = [dict(t) for t in tolerations]
        if scheduler_name:
            spec["schedulerName"] = scheduler_name
        if script is not None:
            if script.predicate is None and script.name_prefix is None:
                script.predicate = lambda p, _n=name, _ns=namespace: (
                    p["metadata"]["name"] == _n and p["metadata"].get("namespace") == _ns
                )
            self.script(script)
        pods = self.rt("v1", "Pod")
        return self.store.create(
            pods, namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        )

    def set_status(
        self,
        api_version: str,
        kind: str,
        name: str,
        status: Obj,
        namespace: str | None = None,
        *,
        merge: bool = True,
    ) -> Obj | None:
        """Set (merge by default) ``status`` of any object, as its controller would."""
        rt = self.rt(api_version, kind)

        def fn(obj: Obj) -> None:
            cur = obj.get("status") or {}
            obj["status"] = {**cur, **status} if merge else dict(status)

        return self.store.mutate(rt, namespace, name, fn)

    def set_daemonset_status(
        self,
        namespace: str,
        name: str,
        *,
        desired: int | None = None,
        ready: int | None = None,
        available: int | None = None,
        updated: int | None = None,
    ) -> Obj | None:
        """Set a DaemonSet's rollout counters (``numberReady`` etc.); unspecified = all ready."""
        rt = self.rt("apps/v1", "DaemonSet")

        def fn(obj: Obj) -> None:
            st = obj.get("status") or {}
            want = desired if desired is not None else int(st.get("desiredNumberScheduled", 0))
            rdy = ready if ready is not None else want
            obj["status"] = {
                **st,
                "currentNumberScheduled": want,
                "desiredNumberScheduled": want,
                "numberMisscheduled": 0,
                "numberReady": rdy,
                "numberAvailable": available if available is not None else rdy,
                "updatedNumberScheduled": updated if updated is not None else want,
                "observedGeneration": obj["metadata"].get("generation", 1),
            }
            if want - (available if available is not None else rdy) > 0:
                obj["status"]["numberUnavailable"] = want - (available if available is not None else rdy)
            else:
                obj["status"].pop("numberUnavailable", None)

        return self.store.mutate(rt, namespace, name, fn)

    def set_deployment_status(
        self, namespace: str, name: str, *, replicas: int | None = None, ready: int | None = None
    ) -> Obj | None:
        """Set a Deployment's replica counters and ``Available``/``Progressing`` conditions."""
        rt = self.rt("apps/v1", "Deployment")
        now = self.clock.timestamp()

        def fn(obj: Obj) -> None:
            want = replicas if replicas is not None else int((obj.get("spec") or {}).get("replicas", 1))
            rdy = ready if ready is not None else want
            available = rdy >= 1 if want else True
            obj["status"] = {
                "observedGeneration": obj["metadata"].get("generation", 1),
                "replicas": want,
                "updatedReplicas": want,
                "readyReplicas": rdy,
                "availableReplicas": rdy,
                "conditions": [
                    {
                        "type": "Available",
                        "status": "True" if available else "False",
                        "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                        "message": "Deployment has minimum availability."
                        if available
                        else "Deployment does not have minimum availability.",
                        "lastTransitionTime": now,
                        "lastUpdateTime": now,
                    },
                    {
                        "type": "Progressing",
                        "status": "True",
                        "reason": "NewReplicaSetAvailable",
                        "message": f'ReplicaSet "{obj["metadata"]["name"]}" has successfully progressed.',
                        "lastTransitionTime": now,
                        "lastUpdateTime": now,
                    },
                ],
            }
            if want - rdy > 0:
                obj["status"]["unavailableReplicas"] = want - rdy
            if not rdy:
                del obj["status"]["readyReplicas"]
                del obj["status"]["availableReplicas"]

        return self.store.mutate(rt, namespace, name, fn)

    def cordon(self, node: str, *, taint: bool = True) -> Obj | None:
        """``kubectl cordon``: ``spec.unschedulable=true`` (+ the unschedulable taint the node
        lifecycle controller adds)."""

        def fn(obj: Obj) -> None:
            spec = obj.setdefault("spec", {})
            spec["unschedulable"] = True
            if taint:
                taints = spec.setdefault("taints", [])
                if not any(t.get("key") == "node.kubernetes.io/unschedulable" for t in taints):
                    taints.append(
                        {
                            "key": "node.kubernetes.io/unschedulable",
                            "effect": "NoSchedule",
                            "timeAdded": self.clock.timestamp(),
                        }
                    )

        return self.store.mutate(self.rt("v1", "Node"), None, node, fn)

    def emit_event(
        self,
        involved: Obj,
        reason: str,
        message: str,
        *,
        type_: str = "Normal",
        component: str = "default-scheduler",
    ) -> Obj:
        """Record a core/v1 Event about ``involved`` (as the named component would)."""
        self._event_seq += 1
        meta = involved["metadata"]
        ns = meta.get("namespace") or "default"
        now = self.clock.timestamp()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{self._event_seq:016x}", "namespace": ns},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion", "v1"),
                "kind": involved.get("kind", ""),
                "name": meta["name"],
                "namespace": ns,
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        return self.store.add(event)
