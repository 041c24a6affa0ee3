"""The kubelet: a bound pod's timeline from its :class:`PodScript` (start, logs, exit, crash loops)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.simulator.base import _SimulatorBase
from aicr_pytest.testing.simulator.pods import PodScript
from aicr_pytest.testing.store import Obj


def image_id(image: str) -> str:
    """The ``imageID`` a kubelet reports once it pulled ``image``: the repository at a digest (here
    derived from the reference, so the same image always has the same id)."""
    repo = image.split("@", 1)[0]
    if ":" in repo.rsplit("/", 1)[-1]:
        repo = repo.rsplit(":", 1)[0]
    return f"{repo or 'image'}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


class _Kubelet(_SimulatorBase):
    """Runs bound pods on the clock (see :mod:`aicr_pytest.testing.simulator`)."""

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
                        "imageID": image_id(str(c.get("image", ""))),
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
                    cs["imageID"] = image_id(str(cs.get("image") or ""))
                self._tamper(obj)
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
            codes = {n: script.container_exit_code(n) for n in self._container_names(pod)}
            code = next((c for c in codes.values() if c != 0), script.exit_code if not codes else 0)
            restart = pod["spec"].get("restartPolicy", "Always")
            owned_by_job = any(r.get("kind") == "Job" for r in pod["metadata"].get("ownerReferences") or [])
            restarts = restart == "Always" or (restart == "OnFailure" and code != 0 and not owned_by_job)

            def terminated(state_started: str, container: str) -> Obj:
                own = codes.get(container, code)
                term: Obj = {
                    "exitCode": own,
                    "reason": script.reason or ("Completed" if own == 0 else "Error"),
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
                        cs["lastState"] = {"terminated": terminated(started, str(cs.get("name")))}
                        cs["state"] = {
                            "waiting": {
                                "reason": "CrashLoopBackOff",
                                "message": f"back-off 5m0s restarting failed container={cs['name']} "
                                f"pod={name}_{ns}({uid})",
                            }
                        }
                    else:
                        cs["state"] = {"terminated": terminated(started, str(cs.get("name")))}
                self._tamper(obj)
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
