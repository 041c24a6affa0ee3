"""The scheduler: filters in kube-scheduler's order, least-allocated placement, ``FailedScheduling``."""

from __future__ import annotations

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
