"""The scheduler: filters in kube-scheduler's order, least-allocated placement, ``FailedScheduling``.

DRA: a pod that references ResourceClaims by name (``spec.resourceClaims[].resourceClaimName``) is
placed only on a node whose ResourceSlices still have enough unallocated devices of each request's
DeviceClass driver (the class's ``device.driver == '<d>'`` selector, else its name); binding writes
the claim's ``status.allocation`` (devices, node selector) and ``reservedFor``, as kube-scheduler's
DynamicResources plugin does. A claim that does not exist keeps the pod Pending. Claims from
templates are not allocated here (their players do it).
"""

from __future__ import annotations

import re

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.simulator.base import _SimulatorBase
from aicr_pytest.testing.simulator.nodes import parse_quantity
from aicr_pytest.testing.simulator.pods import TERMINAL, _affinity_ok, _node_ready, _tolerates, pod_requests
from aicr_pytest.testing.store import Obj


class _Scheduler(_SimulatorBase):
    """Binds Pending pods of the simulated schedulers (see :mod:`aicr_pytest.testing.simulator`)."""

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
            if any(defer(pod) for defer in self.defer_scheduling):
                continue
            self._schedule(pods_rt, pod)

    def schedule_now(self, pod: Obj) -> bool:
        """Schedule one pending pod now with the default filters (for players that schedule pods
        themselves, e.g. a gang scheduler); ``True`` when it got bound."""
        pods_rt = self.rt("v1", "Pod")
        meta = pod["metadata"]
        current = self.store.peek(pods_rt, meta.get("namespace"), meta["name"])
        if current is None or (current.get("spec") or {}).get("nodeName"):
            return False
        self._schedule(pods_rt, current)
        bound = self.store.peek(pods_rt, meta.get("namespace"), meta["name"])
        return bool(bound is not None and (bound.get("spec") or {}).get("nodeName"))

    # ---------------------------------------------------------------------------------- DRA --
    def _claim_driver(self, class_name: str) -> str:
        dc = self.store.peek(self.rt("resource.k8s.io/v1", "DeviceClass"), None, class_name)
        for sel in ((dc or {}).get("spec") or {}).get("selectors") or []:
            expr = str(((sel or {}).get("cel") or {}).get("expression") or "")
            m = re.search(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]", expr)
            if m:
                return m.group(1)
        return class_name

    def _pod_claims(self, pod: Obj) -> list[Obj] | None:
        """The named ResourceClaims the pod references (``None``: one of them does not exist)."""
        ns = pod["metadata"].get("namespace")
        out: list[Obj] = []
        for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = (ref or {}).get("resourceClaimName")
            if not name:
                continue
            claim = self.store.peek(self.rt("resource.k8s.io/v1", "ResourceClaim"), ns, str(name))
            if claim is None:
                return None
            out.append(claim)
        return out

    def _claim_wants(self, claim: Obj) -> list[tuple[str, str, int]]:
        """(request name, driver, count) of an unallocated claim's requests."""
        wants: list[tuple[str, str, int]] = []
        for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            exact = req.get("exactly") or req
            count = int(exact.get("count") or 1)
            wants.append(
                (str(req.get("name")), self._claim_driver(str(exact.get("deviceClassName") or "")), count)
            )
        return wants

    def _free_devices(self, node: str) -> dict[str, list[tuple[str, str]]]:
        """Unallocated (pool, device) per driver on ``node``."""
        taken: set[tuple[str, str, str]] = set()
        for claim in self.store.iter_objects(self.rt("resource.k8s.io/v1", "ResourceClaim")):
            for res in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
                "results"
            ) or []:
                taken.add((str(res.get("driver")), str(res.get("pool")), str(res.get("device"))))
        free: dict[str, list[tuple[str, str]]] = {}
        for sl in self.store.iter_objects(self.rt("resource.k8s.io/v1", "ResourceSlice")):
            spec = sl.get("spec") or {}
            if spec.get("nodeName") != node:
                continue
            driver, pool = str(spec.get("driver")), str((spec.get("pool") or {}).get("name"))
            for dev in spec.get("devices") or []:
                key = (driver, pool, str(dev.get("name")))
                if key not in taken:
                    free.setdefault(driver, []).append((pool, key[2]))
        return free

    def _claims_fit(self, claims: list[Obj], node: str) -> bool:
        free = self._free_devices(node)
        for claim in claims:
            alloc = (claim.get("status") or {}).get("allocation")
            if alloc:
                if _alloc_node(alloc) not in (None, node):
                    return False
                continue
            for _req, driver, count in self._claim_wants(claim):
                if len(free.get(driver, [])) < count:
                    return False
                free[driver] = free[driver][count:]
        return True

    def _allocate_claims(self, pod: Obj, claims: list[Obj], node: str) -> None:
        claims_rt = self.rt("resource.k8s.io/v1", "ResourceClaim")
        meta = pod["metadata"]
        for claim in claims:
            free = self._free_devices(node)
            cmeta = claim["metadata"]

            def allocate(obj: Obj, free: dict[str, list[tuple[str, str]]] = free) -> None:
                st = obj.setdefault("status", {})
                if not st.get("allocation"):
                    results = []
                    for req, driver, count in self._claim_wants(obj):
                        for pool, device in free.get(driver, [])[:count]:
                            results.append({"request": req, "driver": driver, "pool": pool, "device": device})
                        free[driver] = free.get(driver, [])[count:]
                    st["allocation"] = {
                        "devices": {"results": results},
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": [node]}
                                    ]
                                }
                            ]
                        },
                    }
                reserved = [r for r in st.get("reservedFor") or [] if r.get("uid") != meta.get("uid")]
                reserved.append({"resource": "pods", "name": meta["name"], "uid": meta.get("uid", "")})
                st["reservedFor"] = reserved

            self.store.mutate(claims_rt, cmeta.get("namespace"), cmeta["name"], allocate)

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
        claims = self._pod_claims(pod)
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
            if not fail and claims is None:
                fail = ["waiting for ResourceClaim: resourceclaim not found"]
            elif not fail and claims and not self._claims_fit(claims, name):
                fail = ["cannot allocate all claims"]
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
            if claims:
                self._allocate_claims(pod, claims, node_name)
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


def _alloc_node(alloc: Obj) -> str | None:
    """The node a claim allocation is pinned to (its ``metadata.name`` matchFields), if any."""
    for term in (alloc.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for expr in term.get("matchFields") or []:
            if expr.get("key") == "metadata.name" and expr.get("values"):
                return str(expr["values"][0])
    return None
