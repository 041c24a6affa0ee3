"""The batch/v1 Job controller: pods from the template, status counters, completion and deadlines."""

from __future__ import annotations

from aicr_pytest.testing.simulator.base import _SimulatorBase
from aicr_pytest.testing.simulator.pods import TERMINAL, _int_or
from aicr_pytest.testing.store import ApiError, Obj, clone


class _JobController(_SimulatorBase):
    """Reconciles Jobs (see :mod:`aicr_pytest.testing.simulator`)."""

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
        # as the real Job controller labels its pods
        labels.update({"batch.kubernetes.io/job-name": meta["name"], "job-name": meta["name"]})
        labels.update({"batch.kubernetes.io/controller-uid": meta["uid"], "controller-uid": meta["uid"]})
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
