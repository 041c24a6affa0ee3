"""A dict-backed object store with the ``fetch`` signature the deployment logic takes, and a
thread-safe fake clock.  Just enough for pure-logic tests; the FakeCluster lives elsewhere."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aicr_pytest.deployment.healthcheck import NotRegistered


class FakeTime:
    """A :class:`~aicr_pytest.core.clock.Clock` (``time()``/``sleep()``; ``clock()`` is ``time()``):
    sleeping advances virtual time instantly."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.start = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()
        self.on_advance: list[Callable[[float], None]] = []

    def time(self) -> float:
        with self._lock:
            return self.now

    clock = time

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += max(0.0, seconds)
            elapsed = self.now - self.start
        for hook in self.on_advance:
            hook(elapsed)

    @property
    def elapsed(self) -> float:
        return self.now - self.start


class Store:
    """Objects keyed by (apiVersion, kind); ``unregistered`` kinds raise :class:`NotRegistered`,
    ``errors[(kind)]`` raises that exception from every fetch of the kind."""

    def __init__(self, objects: Iterable[dict[str, Any]] = (), unregistered: Iterable[tuple[str, str]] = ()):
        self.objects: list[dict[str, Any]] = list(objects)
        self.unregistered = set(unregistered)
        self.errors: dict[str, Exception] = {}
        self.calls: list[tuple[str, str, str | None, str | None]] = []
        self._lock = threading.Lock()

    def add(self, *objs: dict[str, Any]) -> None:
        with self._lock:
            self.objects.extend(objs)

    def remove(self, kind: str, name: str) -> None:
        with self._lock:
            self.objects = [
                o for o in self.objects if not (o["kind"] == kind and o["metadata"].get("name") == name)
            ]

    def replace(self, obj: dict[str, Any]) -> None:
        self.remove(obj["kind"], obj["metadata"]["name"])
        self.add(obj)

    def fetch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str | None,
        labels: Mapping[str, str] | None,
    ) -> list[dict[str, Any]]:
        with self._lock:
            self.calls.append((api_version, kind, namespace, name))
            if (api_version, kind) in self.unregistered:
                raise NotRegistered(f"no matches for kind {kind!r} in version {api_version!r}")
            if kind in self.errors:
                raise self.errors[kind]
            out = []
            for o in self.objects:
                meta = o.get("metadata") or {}
                if o.get("apiVersion") != api_version or o.get("kind") != kind:
                    continue
                if namespace is not None and meta.get("namespace") not in (namespace, None):
                    continue
                if name is not None and meta.get("name") != name:
                    continue
                obj_labels = meta.get("labels") or {}
                if labels and any(obj_labels.get(k) != v for k, v in labels.items()):
                    continue
                out.append(o)
            return out


# -- object builders ------------------------------------------------------------------------------
def obj(api_version: str, kind: str, name: str, namespace: str | None = None, **body: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    labels = body.pop("labels", None)
    if labels:
        meta["labels"] = labels
    extra_meta = body.pop("metadata", None)
    if extra_meta:
        meta.update(extra_meta)
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}


def namespace(name: str, phase: str = "Active") -> dict[str, Any]:
    return obj("v1", "Namespace", name, status={"phase": phase})


def deployment(
    name: str, ns: str, *, replicas: int | None = 1, available: int = 1, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {} if replicas is None else {"replicas": replicas}
    spec.update(extra.pop("spec", {}))
    return obj("apps/v1", "Deployment", name, ns, spec=spec, status={"availableReplicas": available}, **extra)


def daemonset(name: str, ns: str, *, desired: int = 2, ready: int = 2, **extra: Any) -> dict[str, Any]:
    status = {"desiredNumberScheduled": desired, "numberReady": ready, "numberAvailable": ready}
    return obj("apps/v1", "DaemonSet", name, ns, status=status, **extra)


def statefulset(name: str, ns: str, *, replicas: int | None = 1, ready: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {} if replicas is None else {"replicas": replicas}
    return obj(
        "apps/v1", "StatefulSet", name, ns, spec=spec, status={"readyReplicas": ready, "replicas": ready}
    )


def pod(
    name: str,
    ns: str,
    *,
    phase: str = "Running",
    labels: dict[str, str] | None = None,
    waiting: str | None = None,
    init_waiting: str | None = None,
    node: str = "node-1",
    deleting: bool = False,
    reason: str | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        state: dict[str, Any] = {"running": {}} if waiting is None else {"waiting": {"reason": waiting}}
        status["containerStatuses"] = [{"name": "main", "state": state, "ready": waiting is None}]
    if init_waiting is not None:
        status["initContainerStatuses"] = [{"name": "init", "state": {"waiting": {"reason": init_waiting}}}]
    if reason is not None:
        status["reason"] = reason
    metadata: dict[str, Any] = {}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj(
        "v1", "Pod", name, ns, labels=labels, metadata=metadata, spec={"nodeName": node}, status=status
    )
