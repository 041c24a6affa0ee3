"""The store's state, resource registry and commit bookkeeping (the layer every other one builds on)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aicr_pytest.testing.clock import FakeClock, TimerClock
from aicr_pytest.testing.resources import ResourceType, builtin_types, types_from_crd
from aicr_pytest.testing.store.errors import ApiError
from aicr_pytest.testing.store.objects import (
    _UUID_MASK,
    _UUID_V4,
    Key,
    Obj,
    WatchEvent,
    _meta,
    _owner_uids,
    _Table,
)
from aicr_pytest.testing.virtualtime import Activity


class _StoreBase:
    """State, resource registry and commit bookkeeping; :class:`~aicr_pytest.testing.store.Store`
    adds reads, deletion, writes and watches on top, one layer per module."""

    def __init__(
        self,
        clock: TimerClock | None = None,
        *,
        history_size: int = 10_000,
        seed: int = 0,
        version: Mapping[str, str] | None = None,
    ) -> None:
        self.clock: TimerClock = clock or FakeClock()
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self._rng = random.Random(seed)
        self._rv = 0
        self._tables: dict[tuple[str, str], _Table] = {}
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._builtin_groups: list[str] = []
        self._crd_types: dict[str, list[ResourceType]] = {}
        self._history: list[WatchEvent] = []
        self._history_size = history_size
        self._compacted_rv = 0
        self._dependents: dict[str, set[tuple[tuple[str, str], str, str]]] = {}
        self._by_uid: dict[str, tuple[tuple[str, str], str, str]] = {}
        self._listeners: list[Callable[[WatchEvent], None]] = []
        self._pending: list[WatchEvent] = []
        self._dispatching = False
        self.logs: dict[tuple[str, str, str], str] = {}
        self.previous_logs: dict[tuple[str, str, str], str] = {}
        self._log_writes = 0
        self.state: dict[str, Any] = {}  # free-form scenario state (e.g. recorded fault names)
        #: What the HTTP front end is doing (requests in flight, blocked watches/follows): the
        #: auto-advancer reads it (:mod:`aicr_pytest.testing.virtualtime`).
        self.activity = Activity(self.change_token, self.clock.time)
        self.version: dict[str, str] = {
            "major": "1",
            "minor": "34",
            "gitVersion": "v1.34.1",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24.6",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
        if version:
            self.version.update(version)
        for rt in builtin_types():
            self._register(rt)
            if rt.group not in self._builtin_groups:
                self._builtin_groups.append(rt.group)
        self.clock.add_listener(self._on_clock)

    # ------------------------------------------------------------------------------ registry --
    def _register(self, rt: ResourceType) -> None:
        self._types[(rt.group, rt.version, rt.plural)] = rt
        self._tables.setdefault(rt.storage_key, _Table())

    def resource(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self.lock:
            return self._types.get((group, version, plural))

    def resources(self, group: str, version: str) -> list[ResourceType]:
        with self.lock:
            return [rt for (g, v, _), rt in self._types.items() if g == group and v == version]

    def groups(self) -> list[tuple[str, list[str]]]:
        """(group, versions) pairs for discovery; first version is the preferred one."""
        with self.lock:
            order = list(self._builtin_groups)
            for types in self._crd_types.values():
                for rt in types:
                    if rt.group not in order:
                        order.append(rt.group)
            out: list[tuple[str, list[str]]] = []
            for group in order:
                versions: list[str] = []
                for g, v, _ in self._types:
                    if g == group and v not in versions:
                        versions.append(v)
                if versions:
                    out.append((group, versions))
            return out

    def resolve(self, api_version: str, kind_or_plural: str) -> ResourceType:
        """Find a type by ``apiVersion`` plus ``kind`` or plural name (test helpers use this)."""
        group, _, version = api_version.rpartition("/")
        with self.lock:
            for (g, v, plural), rt in self._types.items():
                if g == group and v == version and kind_or_plural in (rt.kind, plural):
                    return rt
        raise ApiError(
            404,
            "NotFound",
            f"the server could not find the requested resource ({api_version}, {kind_or_plural})",
        )

    # -------------------------------------------------------------------------- bookkeeping --
    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def add_listener(self, listener: Callable[[WatchEvent], None]) -> None:
        """``listener(event)`` runs synchronously after each write, under the store lock.

        Writes made by listeners are queued and dispatched after the current listener returns,
        so controllers see events in commit order without recursion.
        """
        with self.lock:
            self._listeners.append(listener)

    def _on_clock(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def change_token(self) -> tuple[int, int]:
        """Changes with every write (objects and logs); read without the lock (two int reads)."""
        return self._rv, self._log_writes

    def wait_for_change(
        self,
        timeout: float,
        *,
        deadline: float | None = None,
        stopped: Callable[[], bool] = lambda: False,
        delivered: bool = False,
    ) -> None:
        """``cond.wait(timeout)`` for a streaming handler (hold ``cond``), reported to :attr:`activity`
        as a blocked client: ``deadline`` is the clock time its stream ends by itself, if any."""
        token = self.activity.waiting(
            deadline=deadline,
            stopped=stopped,
            delivered=delivered,
            seen=self.change_token(),
            seen_time=self.clock.time(),
        )
        try:
            self.cond.wait(timeout=max(0.0, timeout))
        finally:
            self.activity.resumed(token)

    def _table(self, rt: ResourceType) -> _Table:
        return self._tables[rt.storage_key]

    def _key(self, rt: ResourceType, namespace: str | None, name: str) -> Key:
        return ((namespace or "") if rt.namespaced else "", name)

    def _present(self, rt: ResourceType, obj: Obj) -> Obj:
        if obj.get("apiVersion") == rt.api_version:
            return obj
        out = dict(obj)
        out["apiVersion"] = rt.api_version
        return out

    def _commit(self, rt: ResourceType, obj: Obj, etype: str, old: Obj | None) -> Obj:
        """Persist ``obj`` (a fresh dict) with a new resourceVersion and record the event."""
        self._rv += 1
        meta = _meta(obj)
        meta["resourceVersion"] = str(self._rv)
        table = self._table(rt)
        key = self._key(rt, meta.get("namespace"), meta["name"])
        uid = str(meta.get("uid", ""))
        if etype == "DELETED":
            table.remove(key)
            self._by_uid.pop(uid, None)
        else:
            table.put(key, obj)
            self._by_uid[uid] = (rt.storage_key, key[0], key[1])
        self._index_owners(rt, key, old, None if etype == "DELETED" else obj)
        ev = WatchEvent(self._rv, etype, rt.storage_key, key[0], obj, old, self.clock.time())
        self._history.append(ev)
        if len(self._history) > 2 * self._history_size:
            drop = len(self._history) - self._history_size
            self._compacted_rv = self._history[drop - 1].rv
            del self._history[:drop]
        self._pending.append(ev)
        self.cond.notify_all()
        return obj

    def _index_owners(self, rt: ResourceType, key: Key, old: Obj | None, new: Obj | None) -> None:
        before, after = _owner_uids(old), _owner_uids(new)
        ref = (rt.storage_key, key[0], key[1])
        for uid in before - after:
            deps = self._dependents.get(uid)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self._dependents[uid]
        for uid in after - before:
            self._dependents.setdefault(uid, set()).add(ref)

    def _dispatch(self) -> None:
        """Run listeners for queued events (outermost writer only)."""
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while self._pending:
                ev = self._pending.pop(0)
                for listener in list(self._listeners):
                    listener(ev)
        finally:
            self._dispatching = False

    def _new_uid(self) -> str:
        """A random (seeded, so reproducible) RFC 4122 version-4 UUID string."""
        h = f"{(self._rng.getrandbits(128) & _UUID_MASK) | _UUID_V4:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _stored(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        return self._table(rt).objects.get(self._key(rt, namespace, name))

    def _require(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self._stored(rt, namespace, name)
        if obj is None:
            raise ApiError.not_found(rt, name)
        return obj

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        ns_rt = self._types[("", "v1", "namespaces")]
        ns = self._stored(ns_rt, None, namespace)
        if ns is None:
            raise ApiError.not_found(ns_rt, namespace)
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise ApiError.forbidden(
                rt,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )

    def _after_write(self, rt: ResourceType, old: Obj | None, new: Obj) -> None:
        if rt.plural == "customresourcedefinitions" and rt.group == "apiextensions.k8s.io":
            self._register_crd(new)

    def _register_crd(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        old_types = self._crd_types.pop(name, [])
        for rt in old_types:
            self._types.pop((rt.group, rt.version, rt.plural), None)
        types = types_from_crd(crd)
        # preferred (storage) version first, as discovery lists it
        types.sort(key=lambda t: not t.extra.get("storage"))
        self._crd_types[name] = types
        for rt in types:
            self._register(rt)
