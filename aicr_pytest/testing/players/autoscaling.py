"""Player for autoscaling: the HPA controller, a Deployment controller for the Deployments a check
creates, and Karpenter.

* **HPA controller** (``autoscaling/v2``, External metrics) -- every :data:`HPA_SYNC_S` seconds from
  an HPA's creation until it is deleted: reads the external metric from the metrics player
  (:mod:`.metrics`; no data: ``ScalingActive=False``), computes ``ceil(value / averageValue)``
  clamped to ``[minReplicas, maxReplicas]``, and when that differs from the Deployment's
  ``spec.replicas`` writes ``status.currentReplicas`` (the old count) / ``desiredReplicas`` (the new)
  and scales the Deployment; the next sync reports ``currentReplicas == desiredReplicas``.
* **Deployment controller** -- only for Deployments labelled ``app.kubernetes.io/managed-by:
  aicr-pytest`` (the ones a run creates; a profile's Deployments keep their seeded pods): keeps
  ``spec.replicas`` pods of the template (owner reference, template labels and spec), which the
  simulator's scheduler and kubelet run, and ``status.replicas``/``readyReplicas``/
  ``availableReplicas``.
* **Karpenter** -- when the profile has the ``karpenter`` component (:func:`install_karpenter`): a
  pod left unscheduled with ``nodeSelector: karpenter.sh/nodepool=<pool>`` of an existing NodePool
  gets, :data:`KARPENTER_PROVISION_S` seconds later, a new GPU node of that pool (labelled
  ``karpenter.sh/nodepool``, tainted as the pool's template says); an empty node of a pool is
  removed :data:`KARPENTER_CONSOLIDATE_S` seconds after its last pod went away.

Fault ``hpa-never-scales``: the HPA controller cannot get the metric (``ScalingActive=False``,
``FailedGetExternalMetric``) and never scales.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.testing.builders import add_namespace, crd, crd_established, deployment, system_node
from aicr_pytest.testing.simulator import NodeProfile, Simulator, parse_quantity
from aicr_pytest.testing.store import ApiError, Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster

__all__ = [
    "FAULT_HPA_NEVER_SCALES",
    "HPA_SYNC_S",
    "KARPENTER_POOL",
    "install",
    "install_karpenter",
]

FAULT_HPA_NEVER_SCALES: Final = "hpa-never-scales"
HPA_SYNC_S: Final = 5.0
POD_START_S: Final = 1.0
KARPENTER_PROVISION_S: Final = 20.0
KARPENTER_CONSOLIDATE_S: Final = 30.0
KARPENTER_NAMESPACE: Final = "karpenter"
KARPENTER_POOL: Final = "gpu-autoscaling-test"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
MANAGED_BY: Final = ("app.kubernetes.io/managed-by", "aicr-pytest")


def _quantity(value: Any) -> float | None:
    try:
        return parse_quantity(value)
    except (TypeError, ValueError):
        return None


class _AutoscalingPlayer:
    def __init__(self, fc: SimulatedCluster, faults: list[str]) -> None:
        self.fc = fc
        self.faults = faults
        self.hpas: set[str] = set()  # uids being synced
        self.pod_seq = 0
        self.provisioning: set[str] = set()
        self.node_seq: dict[str, int] = {}

    # -- HPA controller ---------------------------------------------------------------------------
    def hpa_created(self, sim: Simulator, hpa: Obj) -> None:
        uid = str(hpa["metadata"].get("uid"))
        self.hpas.add(uid)
        self.fc.clock.call_later(
            HPA_SYNC_S, lambda: self._sync_hpa(hpa["metadata"].get("namespace"), hpa["metadata"]["name"], uid)
        )

    def hpa_deleted(self, sim: Simulator, hpa: Obj) -> None:
        self.hpas.discard(str(hpa["metadata"].get("uid")))

    def _metric(self, hpa: Obj) -> tuple[float | None, float | None, str]:
        metrics = (hpa.get("spec") or {}).get("metrics") or []
        ext = (metrics[0] or {}).get("external") if metrics and isinstance(metrics[0], dict) else None
        if not isinstance(ext, dict):
            return None, None, ""
        name = str((ext.get("metric") or {}).get("name") or "")
        target = _quantity((ext.get("target") or {}).get("averageValue"))
        player = self.fc.state.get("metrics_player")
        value = player.external_value(name) if player is not None else None
        return value, target, name

    def _sync_hpa(self, namespace: str | None, name: str, uid: str) -> None:
        if uid not in self.hpas:
            return
        hpa = self.fc.find("autoscaling/v2", "HorizontalPodAutoscaler", name, namespace)
        if hpa is None or str(hpa["metadata"].get("uid")) != uid:
            self.hpas.discard(uid)
            return
        self.fc.clock.call_later(HPA_SYNC_S, lambda: self._sync_hpa(namespace, name, uid))
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        dep = self.fc.find("apps/v1", "Deployment", str(ref.get("name") or ""), namespace)
        if dep is None:
            return
        current = int((dep.get("spec") or {}).get("replicas", 1))
        value, target, metric = self._metric(hpa)
        now = self.fc.clock.timestamp()
        if FAULT_HPA_NEVER_SCALES in self.faults or value is None or not target:
            self.fc.sim.set_status(
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                name,
                {
                    "currentReplicas": current,
                    "desiredReplicas": current,
                    "conditions": [
                        {
                            "type": "ScalingActive",
                            "status": "False",
                            "reason": "FailedGetExternalMetric",
                            "message": "the HPA was unable to compute the replica count: unable to get "
                            f"external metric {namespace}/{metric}/nil: no metrics returned from external "
                            "metrics API",
                            "lastTransitionTime": now,
                        }
                    ],
                },
                namespace,
                merge=False,
            )
            return
        lo, hi = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))
        desired = max(lo, min(hi, math.ceil(value / target)))
        self.fc.sim.set_status(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            name,
            {
                "currentReplicas": current,
                "desiredReplicas": desired,
                "currentMetrics": [
                    {
                        "type": "External",
                        "external": {
                            "metric": {"name": metric},
                            "current": {"averageValue": f"{value / max(current, 1):g}"},
                        },
                    }
                ],
                "conditions": [
                    {
                        "type": "AbleToScale",
                        "status": "True",
                        "reason": "SucceededRescale" if desired != current else "ReadyForNewScale",
                        "lastTransitionTime": now,
                    },
                    {
                        "type": "ScalingActive",
                        "status": "True",
                        "reason": "ValidMetricFound",
                        "lastTransitionTime": now,
                    },
                ],
                **({"lastScaleTime": now} if desired != current else {}),
            },
            namespace,
            merge=False,
        )
        if desired != current:
            rt = self.fc.sim.rt("apps/v1", "Deployment")

            def scale(obj: Obj) -> None:
                obj["spec"]["replicas"] = desired

            self.fc.store.mutate(rt, namespace, str(ref.get("name")), scale)

    # -- Deployment controller (run-created Deployments only) --------------------------------------
    @staticmethod
    def _managed(dep: Obj) -> bool:
        key, value = MANAGED_BY
        return (dep["metadata"].get("labels") or {}).get(key) == value

    def deployment_changed(self, sim: Simulator, dep: Obj) -> None:
        if self._managed(dep):
            meta = dep["metadata"]
            self.fc.clock.call_later(
                POD_START_S, lambda: self._sync_deployment(meta.get("namespace"), meta["name"])
            )

    def pod_changed(self, sim: Simulator, pod: Obj) -> None:
        ns = pod["metadata"].get("namespace")
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Deployment":
                self._later(0.0, ns, str(ref.get("name")))
        self._maybe_provision(pod)

    def _later(self, delay: float, namespace: str | None, name: str) -> None:
        self.fc.clock.call_later(delay, lambda: self._sync_deployment(namespace, name))

    def _owned(self, dep: Obj) -> list[Obj]:
        uid = dep["metadata"].get("uid")
        return [
            p
            for p in self.fc.list("v1", "Pod", dep["metadata"].get("namespace"))
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
            and not p["metadata"].get("deletionTimestamp")
        ]

    def _sync_deployment(self, namespace: str | None, name: str) -> None:
        dep = self.fc.find("apps/v1", "Deployment", name, namespace)
        if dep is None or dep["metadata"].get("deletionTimestamp") or not self._managed(dep):
            return
        want = int((dep.get("spec") or {}).get("replicas", 1))
        pods = sorted(self._owned(dep), key=lambda p: str(p["metadata"]["name"]))
        template = (dep.get("spec") or {}).get("template") or {}
        tspec = template.get("spec") or {}
        ns = str(namespace or "default")
        try:
            while len(pods) < want:
                self.pod_seq += 1
                pod = self.fc.sim.create_pod(
                    ns,
                    f"{name}-{self.pod_seq:05d}",
                    containers=list(tspec.get("containers") or []),
                    labels=dict((template.get("metadata") or {}).get("labels") or {}),
                    owner=dep,
                    node_selector=tspec.get("nodeSelector"),
                    tolerations=tspec.get("tolerations"),
                    restart_policy=str(tspec.get("restartPolicy") or "Always"),
                )
                pods.append(pod)
            for extra in pods[want:]:
                self.fc.delete("v1", "Pod", str(extra["metadata"]["name"]), ns)
        except ApiError:
            return  # the namespace is going away
        live = self._owned(dep)
        running = sum(1 for p in live if (p.get("status") or {}).get("phase") == "Running")
        status = {
            "replicas": len(live),
            "readyReplicas": running,
            "availableReplicas": running,
            "updatedReplicas": len(live),
            "observedGeneration": dep["metadata"].get("generation", 1),
        }
        if (dep.get("status") or {}) != status:
            self.fc.sim.set_status("apps/v1", "Deployment", name, status, ns, merge=False)

    # -- Karpenter ----------------------------------------------------------------------------------
    def _maybe_provision(self, pod: Obj) -> None:
        pool = ((pod.get("spec") or {}).get("nodeSelector") or {}).get(NODEPOOL_LABEL)
        if not pool or (pod.get("spec") or {}).get("nodeName") or pool in self.provisioning:
            return
        if self.fc.find("karpenter.sh/v1", "NodePool", str(pool)) is None:
            return
        self.provisioning.add(str(pool))
        self.fc.clock.call_later(KARPENTER_PROVISION_S, lambda: self._provision(str(pool)))

    def _provision(self, pool: str) -> None:
        self.provisioning.discard(pool)
        pending = [
            p
            for p in self.fc.list("v1", "Pod")
            if ((p.get("spec") or {}).get("nodeSelector") or {}).get(NODEPOOL_LABEL) == pool
            and not (p.get("spec") or {}).get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
        ]
        nodepool = self.fc.find("karpenter.sh/v1", "NodePool", pool)
        if not pending or nodepool is None:
            return
        template = ((nodepool.get("spec") or {}).get("template") or {}).get("spec") or {}
        index = self.node_seq.get(pool, 0)
        self.node_seq[pool] = index + 1
        profile = NodeProfile(
            count=1,
            name_prefix=f"{pool}-karpenter",
            labels={NODEPOOL_LABEL: pool, "karpenter.sh/capacity-type": "on-demand"},
            taints=[dict(t) for t in template.get("taints") or []],
        )
        self.fc.sim.add_nodes(profile, start_index=index)
        self.fc.clock.call_later(KARPENTER_CONSOLIDATE_S, lambda: self._consolidate(pool))

    def _consolidate(self, pool: str) -> None:
        nodes = self.fc.list("v1", "Node", label_selector=f"{NODEPOOL_LABEL}={pool}")
        busy = {str((p.get("spec") or {}).get("nodeName")) for p in self.fc.list("v1", "Pod")
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")}  # fmt: skip
        remaining = False
        for node in nodes:
            name = str(node["metadata"]["name"])
            if name in busy:
                remaining = True
            else:
                self.fc.delete("v1", "Node", name)
        if remaining:
            self.fc.clock.call_later(KARPENTER_CONSOLIDATE_S, lambda: self._consolidate(pool))


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    player = _AutoscalingPlayer(fc, list(profile.faults))
    fc.sim.on_create("autoscaling", "v2", "horizontalpodautoscalers", player.hpa_created)
    fc.sim.on_delete("autoscaling", "v2", "horizontalpodautoscalers", player.hpa_deleted)
    fc.sim.on_create("apps", "v1", "deployments", player.deployment_changed)
    fc.sim.on_update("apps", "v1", "deployments", player.deployment_changed)
    fc.sim.on_create("", "v1", "pods", player.pod_changed)
    fc.sim.on_update("", "v1", "pods", player.pod_changed)
    fc.sim.on_delete("", "v1", "pods", player.pod_changed)


def install_karpenter(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    """Karpenter (namespace ``karpenter``): the controller Deployment, the ``karpenter.sh`` CRDs and a
    GPU NodePool :data:`KARPENTER_POOL` (``limits: {nvidia.com/gpu: 100}``, GPU taint), as AICR's CI
    sets it up. ``options["replicas_available"]`` < 1 makes the controller unhealthy."""
    add_namespace(fc, KARPENTER_NAMESPACE)
    for plural, kind in (("nodepools", "NodePool"), ("nodeclaims", "NodeClaim")):
        crd_established(fc, crd("karpenter.sh", plural, kind, ["v1"], namespaced=False))
    deployment(
        fc,
        KARPENTER_NAMESPACE,
        "karpenter",
        "public.ecr.aws/karpenter/controller:1.6.3",
        system_node(profile),
        labels={"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"},
        container="controller",
    )
    if comp.options.get("unhealthy"):
        fc.sim.set_deployment_status(KARPENTER_NAMESPACE, "karpenter", replicas=1, ready=0)
    fc.add(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": KARPENTER_POOL},
            "spec": {
                "limits": {"nvidia.com/gpu": "100"},
                "template": {
                    "spec": {
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                        "requirements": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": ["p5.48xlarge"],
                            }
                        ],
                    }
                },
            },
        }
    )
