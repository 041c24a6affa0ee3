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

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.selectors import label_selector_from_match
from aicr_pytest.testing.store import ApiError, Obj, Store, WatchEvent, clone

__all__ = ["NodeProfile", "PodScript", "Simulator", "parse_quantity"]

TERMINAL = ("Succeeded", "Failed")
Hook = Callable[["Simulator", Obj], None]


# ------------------------------------------------------------------------------- quantities --
_SUFFIX = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_QTY_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def parse_quantity(value: Any) -> float:
    """Kubernetes resource quantity (``"500m"``, ``"16Gi"``, ``8``) as a float."""
    if isinstance(value, (int, float)):
        return float(value)
    m = _QTY_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"invalid quantity {value!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2) or ""]


# ------------------------------------------------------------------------------------ nodes --
@dataclass
class NodeProfile:
    """A pool of identical nodes."""

    count: int = 1
    name_prefix: str = "gpu-node"
    instance_type: str = "p5.48xlarge"
    gpu_product: str | None = "NVIDIA-H100-80GB-HBM3"
    gpus_per_node: int = 8
    gpu_memory_mib: int = 81559
    gpu_family: str = "hopper"
    cpu: str = "192"
    memory: str = "2097152Mi"
    pods: str = "110"
    ephemeral_storage: str = "3750Gi"
    extra_resources: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    zone: str = "us-east-1a"
    region: str = "us-east-1"
    kubelet_version: str = "v1.34.1-eks-1234567"
    os_image: str = "Ubuntu 24.04.2 LTS"
    kernel_version: str = "6.8.0-1021-aws"
    container_runtime: str = "containerd://1.7.27"
    driver_version: str = "580.95.05"
    ready: bool = True
    unschedulable: bool = False

    def node_name(self, index: int) -> str:
        return f"{self.name_prefix}-{index}"

    def build(self, index: int) -> Obj:
        name = self.node_name(index)
        labels: dict[str, str] = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": self.instance_type,
            "beta.kubernetes.io/instance-type": self.instance_type,
            "topology.kubernetes.io/zone": self.zone,
            "topology.kubernetes.io/region": self.region,
        }
        resources: dict[str, str] = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": self.pods,
            "ephemeral-storage": self.ephemeral_storage,
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }
        if self.gpu_product and self.gpus_per_node:
            major = self.driver_version.split(".")[0]
            labels.update(
                {
                    "nvidia.com/gpu.present": "true",
                    "nvidia.com/gpu.product": self.gpu_product,
                    "nvidia.com/gpu.count": str(self.gpus_per_node),
                    "nvidia.com/gpu.memory": str(self.gpu_memory_mib),
                    "nvidia.com/gpu.family": self.gpu_family,
                    "nvidia.com/gpu.machine": self.instance_type,
                    "nvidia.com/gpu.deploy.device-plugin": "true",
                    "nvidia.com/gpu.deploy.driver": "true",
                    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
                    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
                    "nvidia.com/gpu.deploy.container-toolkit": "true",
                    "nvidia.com/cuda.driver.major": major,
                    "nvidia.com/cuda.driver-version.full": self.driver_version,
                    "nvidia.com/mig.capable": "true",
                    "nvidia.com/mig.strategy": "single",
                    "feature.node.kubernetes.io/pci-10de.present": "true",
                }
            )
            resources["nvidia.com/gpu"] = str(self.gpus_per_node)
        labels.update(self.labels)
        resources.update(self.extra_resources)
        taints = [dict(t) for t in self.taints]
        spec: Obj = {"providerID": f"aws:///{self.zone}/i-{index:017x}"}
        if taints:
            spec["taints"] = taints
        if self.unschedulable:
            spec["unschedulable"] = True
            spec.setdefault("taints", []).append(
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": None}
            )
            spec["taints"][-1].pop("timeAdded")
        ready = "True" if self.ready else "False"
        conds = [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
            {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
            {
                "type": "Ready",
                "status": ready,
                "reason": "KubeletReady" if self.ready else "KubeletNotReady",
                "message": "kubelet is posting ready status" if self.ready else "container runtime is down",
            },
        ]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": dict(self.annotations)},
            "spec": spec,
            "status": {
                "capacity": dict(resources),
                "allocatable": dict(resources),
                "conditions": conds,
                "addresses": [
                    {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250 + 1}"},
                    {"type": "Hostname", "address": name},
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    "bootID": f"boot-{name}",
                    "containerRuntimeVersion": self.container_runtime,
                    "kernelVersion": self.kernel_version,
                    "kubeProxyVersion": self.kubelet_version,
                    "kubeletVersion": self.kubelet_version,
                    "machineID": f"machine-{name}",
                    "operatingSystem": "linux",
                    "osImage": self.os_image,
                    "systemUUID": f"uuid-{name}",
                },
            },
        }


# ------------------------------------------------------------------------------ pod scripts --
@dataclass
class PodScript:
    """The scripted life of matching pods once bound to a node.

    Matching: every given criterion must hold (``name_prefix``, ``namespace``, ``labels`` subset,
    ``predicate``); ``times`` limits how many pods the script applies to.
    Timeline (clock seconds): ``start_after`` from binding to Running; ``run_for`` from Running to
    termination (``None``: runs until deleted). ``logs`` (one string for every container or a
    mapping container -> text) is written when the containers start; ``log_lines`` appends
    ``(seconds after start, text)`` chunks to the first container (or ``log_container``).
    Termination: ``exit_code`` and ``reason`` (default ``Completed`` for 0, else ``Error``; use
    ``OOMKilled`` with exit code 137 for OOM), ``message`` as the termination message.
    ``waiting_reason`` (e.g. ``ImagePullBackOff``) keeps the pod Pending with that waiting state.
    ``crashloop`` leaves the container in ``CrashLoopBackOff`` with ``restart_count`` restarts
    after a non-zero exit (pods that restart: ``restartPolicy`` Always/OnFailure, not Jobs).
    """

    name_prefix: str | None = None
    namespace: str | None = None
    labels: Mapping[str, str] | None = None
    predicate: Callable[[Obj], bool] | None = None
    start_after: float = 1.0
    run_for: float | None = 1.0
    exit_code: int = 0
    reason: str | None = None
    message: str | None = None
    logs: str | Mapping[str, str] = ""
    log_lines: Sequence[tuple[float, str]] = ()
    log_container: str | None = None
    waiting_reason: str | None = None
    crashloop: bool = False
    restart_count: int = 5
    times: int | None = None
    used: int = 0

    def matches(self, pod: Obj) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        meta = pod.get("metadata") or {}
        if self.name_prefix is not None and not str(meta.get("name", "")).startswith(self.name_prefix):
            return False
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.labels:
            have = meta.get("labels") or {}
            if any(have.get(k) != v for k, v in self.labels.items()):
                return False
        return not (self.predicate is not None and not self.predicate(pod))


# ---------------------------------------------------------------------------- pod helpers --
def pod_requests(pod: Obj) -> dict[str, float]:
    """Effective requests: sum over containers (requests, defaulting to limits), max with init."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        merged = dict(res.get("limits") or {})
        merged.update(res.get("requests") or {})
        for k, v in merged.items():
            total[k] = total.get(k, 0.0) + parse_quantity(v)
    for c in spec.get("initContainers") or []:
        res = c.get("resources") or {}
        merged = dict(res.get("limits") or {})
        merged.update(res.get("requests") or {})
        for k, v in merged.items():
            total[k] = max(total.get(k, 0.0), parse_quantity(v))
    return total


def _tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        op = tol.get("operator", "Equal")
        if not tol.get("key"):
            if op == "Exists":
                return True
            continue
        if tol.get("key") != taint.get("key"):
            continue
        if op == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _node_ready(node: Obj) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def _match_node_selector_term(term: Mapping[str, Any], labels: Mapping[str, str], node: Obj) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator"), list(expr.get("values") or [])
        have = labels.get(key)
        ok = {
            "In": have is not None and have in values,
            "NotIn": have is None or have not in values,
            "Exists": have is not None,
            "DoesNotExist": have is None,
            "Gt": have is not None and values and _int_or(have) > _int_or(values[0]),
            "Lt": have is not None and values and _int_or(have) < _int_or(values[0]),
        }.get(str(op), False)
        if not ok:
            return False
    for expr in term.get("matchFields") or []:
        if expr.get("key") == "metadata.name":
            name = node["metadata"]["name"]
            values = list(expr.get("values") or [])
            if (expr.get("operator") == "In") != (name in values):
                return False
    return True


def _int_or(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _affinity_ok(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    if required:
        return any(_match_node_selector_term(t, labels, node) for t in required)
    return True


# --------------------------------------------------------------------------------- simulator --
class Simulator:
    """Controllers over a :class:`Store`; see the module docstring."""

    def __init__(self, store: Store, *, enabled: bool = True) -> None:
        self.store = store
        self.clock = store.clock
        self.enabled = enabled
        self.schedulers: set[str] = {"default-scheduler"}
        self.scripts: list[PodScript] = []
        self.default_job_script = PodScript(start_after=1.0, run_for=1.0)
        self.default_service_script = PodScript(start_after=1.0, run_for=None)
        self._hooks: dict[tuple[str, str, str], list[Hook]] = {}
        self._pending: dict[tuple[str, str], None] = {}  # unscheduled pods, in arrival order
        self._started: set[str] = set()  # pod uids whose kubelet timeline started
        self._event_seq = 0
        self._rt: dict[str, ResourceType] = {}
        store.add_listener(self._on_event)

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

    def script(self, script: PodScript | None = None, **kwargs: Any) -> PodScript:
        """Register a :class:`PodScript` (or build one from kwargs); later scripts win."""
        s = script or PodScript(**kwargs)
        self.scripts.insert(0, s)
        return s

    def on_create(self, group: str, version: str, plural: str, callback: Hook) -> None:
        """``callback(sim, obj)`` after an object of ``group/version plural`` is created.

        Hooks see objects of any served version of the resource (``version`` documents intent).
        """
        self._hooks.setdefault(("ADDED", group, plural), []).append(callback)

    def on_update(self, group: str, version: str, plural: str, callback: Hook) -> None:
        self._hooks.setdefault(("MODIFIED", group, plural), []).append(callback)

    def on_delete(self, group: str, version: str, plural: str, callback: Hook) -> None:
        self._hooks.setdefault(("DELETED", group, plural), []).append(callback)

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

    # ---------------------------------------------------------------------------- scheduler --
    def schedule_pending(self) -> None:
        if not self._pending:
            return
        pods_rt = self.rt("v1", "Pod")
        for key in list(self._pending):
            pod = self.store.peek(pods_rt, key[0], key[1])
            if pod is None or (pod.get("spec") or {}).get("nodeName"):
                self._pending.pop(key, None)
                continue
            if (pod.get("spec") or {}).get("schedulerName", "default-scheduler") not in self.schedulers:
                continue
            self._schedule(pods_rt, pod)

    def _usage(self) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
        used: dict[str, dict[str, float]] = {}
        counts: dict[str, int] = {}
        for pod in self.store.iter_objects(self.rt("v1", "Pod")):
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") in TERMINAL:
                continue
            counts[node] = counts.get(node, 0) + 1
            bucket = used.setdefault(node, {})
            for k, v in pod_requests(pod).items():
                bucket[k] = bucket.get(k, 0.0) + v
        return used, counts

    def _schedule(self, pods_rt: ResourceType, pod: Obj) -> None:
        nodes = self.store.iter_objects(self.rt("v1", "Node"))
        used, counts = self._usage()
        req = pod_requests(pod)
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        reasons: dict[str, int] = {}
        feasible: list[tuple[float, int, str]] = []
        for node in nodes:
            name = node["metadata"]["name"]
            nspec, nstatus = node.get("spec") or {}, node.get("status") or {}
            fail: list[str] = []
            if nspec.get("unschedulable") and not _tolerates(
                tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
            ):
                fail = ["node(s) were unschedulable"]
            if not fail:
                taints = list(nspec.get("taints") or [])
                if not _node_ready(node):
                    taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
                for taint in taints:
                    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                        continue
                    if taint.get("key") == "node.kubernetes.io/unschedulable" and nspec.get("unschedulable"):
                        continue
                    if not _tolerates(tolerations, taint):
                        fail = [
                            f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
                        ]
                        break
            if not fail and not _affinity_ok(pod, node):
                fail = ["node(s) didn't match Pod's node affinity/selector"]
            if not fail:
                alloc = nstatus.get("allocatable") or {}
                have = used.get(name, {})
                for res, amount in sorted(req.items()):
                    if amount <= 0:
                        continue
                    free = parse_quantity(alloc.get(res, 0)) - have.get(res, 0.0)
                    if amount > free + 1e-9:
                        fail.append(f"Insufficient {res}")
                if counts.get(name, 0) + 1 > parse_quantity(alloc.get("pods", 110)):
                    fail.append("Too many pods")
            if fail:
                for r in fail:
                    reasons[r] = reasons.get(r, 0) + 1
                continue
            gpu_free = parse_quantity((nstatus.get("allocatable") or {}).get("nvidia.com/gpu", 0)) - used.get(
                name, {}
            ).get("nvidia.com/gpu", 0.0)
            feasible.append((-gpu_free if req.get("nvidia.com/gpu") else 0.0, counts.get(name, 0), name))
        meta = pod["metadata"]
        if feasible:
            feasible.sort()
            node_name = feasible[0][2]
            now = self.clock.timestamp()

            def bind(obj: Obj) -> None:
                obj["spec"]["nodeName"] = node_name
                st = obj.setdefault("status", {})
                conds = [c for c in st.get("conditions") or [] if c.get("type") != "PodScheduled"]
                conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now})
                st["conditions"] = conds

            self._pending.pop((meta.get("namespace", ""), meta["name"]), None)
            bound = self.store.mutate(pods_rt, meta.get("namespace"), meta["name"], bind)
            if bound is not None:
                self.emit_event(
                    bound,
                    "Scheduled",
                    f"Successfully assigned {meta.get('namespace')}/{meta['name']} to {node_name}",
                )
            return
        total = len(nodes)
        detail = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
        message = f"0/{total} nodes are available: {detail}." if detail else f"0/{total} nodes are available."
        message += (
            f" preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
        )
        current = next(
            (c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
            None,
        )
        if current is not None and current.get("message") == message:
            return
        now = self.clock.timestamp()

        def unschedulable(obj: Obj) -> None:
            st = obj.setdefault("status", {})
            conds = [c for c in st.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastTransitionTime": now,
                }
            )
            st["conditions"] = conds

        updated = self.store.mutate(pods_rt, meta.get("namespace"), meta["name"], unschedulable)
        if updated is not None:
            self.emit_event(updated, "FailedScheduling", message, type_="Warning")

    # ------------------------------------------------------------------------------ kubelet --
    def _script_for(self, pod: Obj) -> PodScript:
        for s in self.scripts:
            if s.matches(pod):
                s.used += 1
                return s
        restart = (pod.get("spec") or {}).get("restartPolicy", "Always")
        return self.default_service_script if restart == "Always" else self.default_job_script

    def _container_names(self, pod: Obj) -> list[str]:
        return [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]

    def _kubelet_start(self, pod: Obj) -> None:
        script = self._script_for(pod)
        meta = pod["metadata"]
        ns, name, uid = meta.get("namespace", ""), meta["name"], meta.get("uid", "")
        pods_rt = self.rt("v1", "Pod")
        node = self.store.peek(self.rt("v1", "Node"), None, pod["spec"]["nodeName"])
        host_ip = ""
        if node is not None:
            host_ip = next(
                (
                    a["address"]
                    for a in (node.get("status") or {}).get("addresses") or []
                    if a.get("type") == "InternalIP"
                ),
                "",
            )
        images = {str(c.get("name")): str(c.get("image", "")) for c in pod["spec"].get("containers") or []}
        waiting = script.waiting_reason or "ContainerCreating"
        now = self.clock.timestamp()

        def creating(obj: Obj) -> None:
            st = obj.setdefault("status", {})
            st["hostIP"] = host_ip
            st["startTime"] = now
            st["containerStatuses"] = [
                {
                    "name": n,
                    "image": images[n],
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"waiting": {"reason": waiting}},
                }
                for n in images
            ]
            if obj["spec"].get("initContainers"):
                st["initContainerStatuses"] = [
                    {
                        "name": str(c.get("name")),
                        "image": str(c.get("image", "")),
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                    }
                    for c in obj["spec"]["initContainers"]
                ]
            self._set_condition(st, "Initialized", "True", now)
            self._set_condition(st, "Ready", "False", now, reason="ContainersNotReady")
            self._set_condition(st, "ContainersReady", "False", now, reason="ContainersNotReady")

        self.store.mutate(pods_rt, ns, name, creating)
        if script.waiting_reason:
            self.emit_event(
                pod, "Failed", f"Error: {script.waiting_reason}", type_="Warning", component="kubelet"
            )
            return
        self.clock.call_later(script.start_after, lambda: self._kubelet_run(pods_rt, ns, name, uid, script))

    def _alive(self, pods_rt: ResourceType, ns: str, name: str, uid: str) -> Obj | None:
        pod = self.store.peek(pods_rt, ns, name)
        if pod is None or pod["metadata"].get("uid") != uid or pod["metadata"].get("deletionTimestamp"):
            return None
        return pod

    def _kubelet_run(self, pods_rt: ResourceType, ns: str, name: str, uid: str, script: PodScript) -> None:
        with self.store.lock:
            pod = self._alive(pods_rt, ns, name, uid)
            if pod is None:
                return
            now = self.clock.timestamp()
            names = self._container_names(pod)
            for n in names:
                text = script.logs if isinstance(script.logs, str) else script.logs.get(n, "")
                if text:
                    self.store.append_log(ns, name, n, text)

            def running(obj: Obj) -> None:
                st = obj.setdefault("status", {})
                st["phase"] = "Running"
                st["podIP"] = f"192.168.{(self._event_seq // 250) % 250}.{self._event_seq % 250 + 1}"
                st["podIPs"] = [{"ip": st["podIP"]}]
                for cs in st.get("containerStatuses") or []:
                    cs["state"] = {"running": {"startedAt": now}}
                    cs["ready"] = True
                    cs["started"] = True
                self._set_condition(st, "Ready", "True", now)
                self._set_condition(st, "ContainersReady", "True", now)

            self.store.mutate(pods_rt, ns, name, running)
        first = script.log_container or (names[0] if names else "main")
        for offset, text in script.log_lines:
            self.clock.call_later(offset, self._log_appender(pods_rt, ns, name, uid, first, text))
        if script.run_for is not None:
            self.clock.call_later(script.run_for, lambda: self._kubelet_exit(pods_rt, ns, name, uid, script))

    def _log_appender(
        self, pods_rt: ResourceType, ns: str, name: str, uid: str, container: str, text: str
    ) -> Callable[[], None]:
        def append() -> None:
            with self.store.lock:
                if self._alive(pods_rt, ns, name, uid) is not None:
                    self.store.append_log(ns, name, container, text)

        return append

    def _kubelet_exit(self, pods_rt: ResourceType, ns: str, name: str, uid: str, script: PodScript) -> None:
        with self.store.lock:
            pod = self._alive(pods_rt, ns, name, uid)
            if pod is None:
                return
            now = self.clock.timestamp()
            code = script.exit_code
            reason = script.reason or ("Completed" if code == 0 else "Error")
            restart = pod["spec"].get("restartPolicy", "Always")
            owned_by_job = any(r.get("kind") == "Job" for r in pod["metadata"].get("ownerReferences") or [])
            restarts = restart == "Always" or (restart == "OnFailure" and code != 0 and not owned_by_job)

            def terminated(state_started: str) -> Obj:
                term: Obj = {
                    "exitCode": code,
                    "reason": reason,
                    "startedAt": state_started,
                    "finishedAt": now,
                }
                if script.message:
                    term["message"] = script.message
                return term

            def exit_fn(obj: Obj) -> None:
                st = obj.setdefault("status", {})
                for cs in st.get("containerStatuses") or []:
                    started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
                    cs["ready"] = False
                    cs["started"] = False
                    if restarts and (code != 0 or script.crashloop):
                        cs["restartCount"] = script.restart_count
                        cs["lastState"] = {"terminated": terminated(started)}
                        cs["state"] = {
                            "waiting": {
                                "reason": "CrashLoopBackOff",
                                "message": f"back-off 5m0s restarting failed container={cs['name']} "
                                f"pod={name}_{ns}({uid})",
                            }
                        }
                    else:
                        cs["state"] = {"terminated": terminated(started)}
                if not restarts:
                    st["phase"] = "Succeeded" if code == 0 else "Failed"
                    cond_reason = "PodCompleted" if code == 0 else "PodFailed"
                else:
                    cond_reason = "ContainersNotReady"
                self._set_condition(st, "Ready", "False", now, reason=cond_reason)
                self._set_condition(st, "ContainersReady", "False", now, reason=cond_reason)

            if restarts and (code != 0 or script.crashloop):
                for n in self._container_names(pod):
                    self.store.set_log(ns, name, n, self.store.logs.get((ns, name, n), ""), previous=True)
            self.store.mutate(pods_rt, ns, name, exit_fn)
            if restarts and (code != 0 or script.crashloop):
                self.emit_event(
                    pod,
                    "BackOff",
                    "Back-off restarting failed container",
                    type_="Warning",
                    component="kubelet",
                )

    @staticmethod
    def _set_condition(status: Obj, ctype: str, value: str, now: str, reason: str | None = None) -> None:
        conds = status.setdefault("conditions", [])
        for c in conds:
            if c.get("type") == ctype:
                if c.get("status") != value:
                    c["lastTransitionTime"] = now
                c["status"] = value
                if reason:
                    c["reason"] = reason
                else:
                    c.pop("reason", None)
                return
        cond: Obj = {"type": ctype, "status": value, "lastTransitionTime": now}
        if reason:
            cond["reason"] = reason
        conds.append(cond)

    # ------------------------------------------------------------------------ job controller --
    def _sync_owner_job(self, pod: Obj) -> None:
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/"):
                self._sync_job(pod["metadata"].get("namespace", ""), str(ref.get("name")))

    def _sync_job(self, ns: str, name: str) -> None:
        jobs_rt, pods_rt = self.rt("batch/v1", "Job"), self.rt("v1", "Pod")
        job = self.store.peek(jobs_rt, ns, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        status = job.get("status") or {}
        if any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in status.get("conditions") or []
        ):
            return
        spec = job.get("spec") or {}
        uid = job["metadata"]["uid"]
        pods = [
            p
            for p in self.store.iter_objects(pods_rt, ns)
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        ]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        active = [p for p in live if (p.get("status") or {}).get("phase") not in TERMINAL]
        succeeded = [p for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"]
        failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
        ready = sum(
            1
            for p in active
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (p.get("status") or {}).get("conditions") or []
            )
        )
        completions = int(spec.get("completions") or spec.get("parallelism") or 1)
        parallelism = _int_or(spec.get("parallelism", 1))
        backoff = int(spec.get("backoffLimit", 6))
        indexed = spec.get("completionMode") == "Indexed"
        now = self.clock.timestamp()
        outcome: tuple[str, str, str] | None = None
        if len(failed) > backoff:
            outcome = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        elif self._done_indexes(succeeded, indexed, completions):
            outcome = ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")
        if outcome is None and not spec.get("suspend"):
            want = min(parallelism, completions - len(succeeded)) - len(active)
            if want > 0:
                taken = {self._index(p) for p in active + succeeded}
                free = [i for i in range(completions) if i not in taken]
                for n in range(want):
                    self._create_job_pod(job, free[n] if indexed and n < len(free) else None)
                self._sync_job(ns, name)
                return
        self._ensure_deadline(job)

        def update(obj: Obj) -> None:
            st = obj.setdefault("status", {})
            st.setdefault("startTime", now)
            st["active"] = len(active)
            st["ready"] = ready
            st["succeeded"] = len(succeeded)
            st["failed"] = len(failed)
            st["terminating"] = 0
            st["uncountedTerminatedPods"] = {}
            for k in ("active", "succeeded", "failed"):
                if not st[k]:
                    del st[k]
            if indexed and succeeded:
                st["completedIndexes"] = _ranges(
                    sorted({self._index(p) for p in succeeded if self._index(p) >= 0})
                )
            if outcome is not None:
                kind, reason, message = outcome
                interim = "SuccessCriteriaMet" if kind == "Complete" else "FailureTarget"
                st["conditions"] = [
                    {
                        "type": interim,
                        "status": "True",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": now,
                        "lastTransitionTime": now,
                    },
                    {
                        "type": kind,
                        "status": "True",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": now,
                        "lastTransitionTime": now,
                    },
                ]
                if kind == "Complete":
                    st["completionTime"] = now

        self.store.mutate(jobs_rt, ns, name, update)
        if outcome is not None:
            for p in active:
                self.store.remove(pods_rt, ns, p["metadata"]["name"])
            self.emit_event(
                job,
                "Completed" if outcome[0] == "Complete" else outcome[1],
                "Job completed" if outcome[0] == "Complete" else outcome[2],
                type_="Normal" if outcome[0] == "Complete" else "Warning",
                component="job-controller",
            )

    @staticmethod
    def _index(pod: Obj) -> int:
        value = (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
        return _int_or(value) if value is not None else -1

    def _done_indexes(self, succeeded: list[Obj], indexed: bool, completions: int) -> bool:
        if indexed:
            return len({self._index(p) for p in succeeded}) >= completions
        return len(succeeded) >= completions

    def _create_job_pod(self, job: Obj, index: int | None) -> None:
        meta = job["metadata"]
        template = clone((job.get("spec") or {}).get("template") or {})
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        annotations = dict(tmeta.get("annotations") or {})
        prefix = f"{meta['name']}-"
        spec = template.get("spec") or {}
        if index is not None:
            prefix = f"{meta['name']}-{index}-"
            labels["batch.kubernetes.io/job-completion-index"] = str(index)
            annotations["batch.kubernetes.io/job-completion-index"] = str(index)
            for c in spec.get("containers") or []:
                c.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "value": str(index)})
            spec.setdefault("hostname", f"{meta['name']}-{index}")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": prefix,
                "namespace": meta.get("namespace"),
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }
        try:
            created = self.store.create(self.rt("v1", "Pod"), meta.get("namespace"), pod)
        except ApiError as exc:
            self.emit_event(
                job,
                "FailedCreate",
                f"Error creating: {exc.message}",
                type_="Warning",
                component="job-controller",
            )
            return
        self.emit_event(
            job, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}", component="job-controller"
        )

    def _ensure_deadline(self, job: Obj) -> None:
        spec = job.get("spec") or {}
        deadline = spec.get("activeDeadlineSeconds")
        uid = job["metadata"]["uid"]
        if not deadline or uid in self._started:
            return
        self._started.add(uid)
        ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]

        def expire() -> None:
            with self.store.lock:
                current = self.store.peek(self.rt("batch/v1", "Job"), ns, name)
                if current is None or current["metadata"].get("uid") != uid:
                    return
                st = current.get("status") or {}
                if any(
                    c.get("status") == "True" and c.get("type") in ("Complete", "Failed")
                    for c in st.get("conditions") or []
                ):
                    return
                now = self.clock.timestamp()
                message = "Job was active longer than specified deadline"

                def fail(obj: Obj) -> None:
                    s = obj.setdefault("status", {})
                    s["conditions"] = [
                        {
                            "type": "FailureTarget",
                            "status": "True",
                            "reason": "DeadlineExceeded",
                            "message": message,
                            "lastProbeTime": now,
                            "lastTransitionTime": now,
                        },
                        {
                            "type": "Failed",
                            "status": "True",
                            "reason": "DeadlineExceeded",
                            "message": message,
                            "lastProbeTime": now,
                            "lastTransitionTime": now,
                        },
                    ]
                    s.pop("active", None)

                self.store.mutate(self.rt("batch/v1", "Job"), ns, name, fail)
                pods_rt = self.rt("v1", "Pod")
                for p in self.store.iter_objects(pods_rt, ns):
                    if (
                        any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
                        and (p.get("status") or {}).get("phase") not in TERMINAL
                    ):
                        self.store.remove(pods_rt, ns, p["metadata"]["name"])
                self.emit_event(
                    current, "DeadlineExceeded", message, type_="Warning", component="job-controller"
                )

        self.clock.call_later(float(deadline), expire)


def _ranges(values: list[int]) -> str:
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(out)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """True when ``labels`` satisfy a ``metav1.LabelSelector``."""
    return label_selector_from_match(selector).matches(labels)
