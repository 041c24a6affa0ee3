"""The fake API server's object store: Kubernetes REST semantics on plain JSON dicts.

Everything the HTTP layer (:mod:`aicr_pytest.testing.server`) serves goes through :class:`Store`,
and so do the test helpers (``FakeCluster.add/get/list``) and the simulator's controllers.
Semantics reproduced, each with a unit test in ``tests/cluster/test_fake_*.py`` citing the API
convention (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md)
or Kubernetes documentation page it follows:

* create 201 / 409 ``AlreadyExists``; get 404 ``NotFound``; errors are ``Status`` bodies with
  ``reason``/``details``/``code``;
* ``generateName``, ``uid``, ``creationTimestamp``, ``generation``, a single global,
  monotonically increasing ``resourceVersion``;
* optimistic concurrency: PUT with a stale ``resourceVersion`` -> 409 ``Conflict``;
* status subresource: writes to the main resource ignore ``status``; ``/status`` writes change
  only ``status``;
* PATCH: JSON merge patch, strategic merge patch (built-in types only; 415 for custom
  resources, as the real server), JSON patch, and a simplified server-side apply;
* DELETE: 200 with a ``Status`` (or the object, for kinds whose registry returns it: pods,
  service accounts, storage classes, custom resources); finalizers keep the object with
  ``deletionTimestamp`` set until they are removed; 202 only when ``orphanDependents=false``
  (exactly what the apiserver's delete handler does); garbage collection of dependents by
  ``ownerReferences`` with ``Background``/``Foreground``/``Orphan`` propagation (batch/v1 Jobs
  orphan by default, as in Kubernetes);
* namespaces: objects can't be created in a missing namespace (404) or a terminating one (403);
  deleting a namespace deletes its contents and the namespace goes once they are gone;
* lists: ``kind: <Kind>List`` with ``metadata.resourceVersion``, ``limit``/``continue``
  pagination over keys kept sorted (no re-sort per page), label and field selectors;
* watch: synthetic ``ADDED`` for the initial state, then ``ADDED``/``MODIFIED``/``DELETED`` from
  a bounded event history, resume from a ``resourceVersion``, ``410 Gone`` (ERROR event) when
  that version has been compacted away, selector transitions reported as ADDED/DELETED like the
  watch cache;
* CRDs: creating a ``CustomResourceDefinition`` makes its group/versions servable and
  discoverable, deleting it removes them together with all its objects.

Known gaps vs a real API server: no admission (beyond namespace lifecycle), no RBAC/authn (every
token is cluster-admin), no schema validation or defaulting beyond a few fields (pod phase,
Job selector/labels/defaults, namespace finalizer), no version conversion (all served versions of
a CRD share one storage and only ``apiVersion`` is rewritten), continue tokens are served from
the live state rather than a snapshot at their resourceVersion, server-side apply does not
track ``managedFields`` (it merges like a strategic merge patch and creates when missing), pods
are deleted immediately (no graceful termination period), no ``dryRun`` side effects other than
skipping persistence, no exec/attach/port-forward.
"""

from __future__ import annotations

import base64
import bisect
import builtins
import contextlib
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from aicr_pytest.testing.clock import FakeClock, TimerClock
from aicr_pytest.testing.patch import PatchError, json_merge_patch, json_patch, strategic_merge_patch
from aicr_pytest.testing.resources import ResourceType, builtin_types, types_from_crd
from aicr_pytest.testing.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from aicr_pytest.testing.virtualtime import Activity

__all__ = ["ApiError", "Obj", "Store", "WatchEvent", "clone"]

Obj = dict[str, Any]
_T = TypeVar("_T")
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

_UUID_V4 = (0x4 << 76) | (0x8 << 60)
_UUID_MASK = ~((0xF << 76) | (0xC << 60)) & ((1 << 128) - 1)
_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def clone(value: _T) -> _T:
    """Deep copy of a JSON value (faster than ``copy.deepcopy`` for plain dicts/lists)."""
    return cast(_T, _clone(value))


class ApiError(Exception):
    """An error the API server answers with a ``Status`` object (``kind: Status``)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})
        self.headers = dict(headers or {})

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body

    # -- constructors matching k8s.io/apimachinery/pkg/api/errors ---------------------------------
    @classmethod
    def not_found(cls, rt: ResourceType | str, name: str, group: str = "") -> ApiError:
        res, grp = (rt.group_resource, rt.group) if isinstance(rt, ResourceType) else (rt, group)
        plural = rt.plural if isinstance(rt, ResourceType) else rt
        details: Obj = {"name": name, "kind": plural}
        if grp:
            details["group"] = grp
        return cls(404, "NotFound", f'{res} "{name}" not found', details)

    @classmethod
    def already_exists(cls, rt: ResourceType, name: str) -> ApiError:
        details: Obj = {"name": name, "kind": rt.plural}
        if rt.group:
            details["group"] = rt.group
        return cls(409, "AlreadyExists", f'{rt.group_resource} "{name}" already exists', details)

    @classmethod
    def conflict(cls, rt: ResourceType, name: str, why: str) -> ApiError:
        details: Obj = {"name": name, "kind": rt.plural}
        if rt.group:
            details["group"] = rt.group
        return cls(
            409, "Conflict", f'Operation cannot be fulfilled on {rt.group_resource} "{name}": {why}', details
        )

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def invalid(cls, rt: ResourceType, name: str, field: str, detail: str) -> ApiError:
        details: Obj = {
            "name": name,
            "kind": rt.kind,
            "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}],
        }
        if rt.group:
            details["group"] = rt.group
        return cls(422, "Invalid", f'{rt.kind} "{name}" is invalid: {field}: {detail}', details)

    @classmethod
    def forbidden(cls, rt: ResourceType, name: str, why: str) -> ApiError:
        details: Obj = {"name": name, "kind": rt.plural}
        if rt.group:
            details["group"] = rt.group
        return cls(403, "Forbidden", f'{rt.group_resource} "{name}" is forbidden: {why}', details)

    @classmethod
    def gone(cls, message: str) -> ApiError:
        return cls(410, "Expired", message)


@dataclass(slots=True)
class WatchEvent:
    """One entry of the store's change history (what ``watch`` streams)."""

    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    storage_key: tuple[str, str]  # (group, plural)
    namespace: str
    obj: Obj
    old: Obj | None
    at: float  # clock time of the change


class _Table:
    """Objects of one resource, with keys kept sorted lazily (bulk loads sort once)."""

    __slots__ = ("keys", "objects", "sorted")

    def __init__(self) -> None:
        self.objects: dict[Key, Obj] = {}
        self.keys: list[Key] = []
        self.sorted = True

    def put(self, key: Key, obj: Obj) -> None:
        if key not in self.objects:
            if self.sorted and self.keys and key < self.keys[-1]:
                self.sorted = False
            self.keys.append(key)
        self.objects[key] = obj

    def remove(self, key: Key) -> None:
        if self.objects.pop(key, None) is None:
            return
        self.ensure_sorted()
        idx = bisect.bisect_left(self.keys, key)
        del self.keys[idx]

    def ensure_sorted(self) -> None:
        if not self.sorted:
            self.keys.sort()
            self.sorted = True

    def namespace_range(self, namespace: str) -> tuple[int, int]:
        self.ensure_sorted()
        lo = bisect.bisect_left(self.keys, (namespace, ""))
        hi = bisect.bisect_left(self.keys, (namespace + "\x00", ""))
        return lo, hi


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _owner_uids(obj: Obj | None) -> set[str]:
    if not obj:
        return set()
    return {
        str(r.get("uid")) for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("uid")
    }


def _without(obj: Obj, *top: str) -> Obj:
    return {k: v for k, v in obj.items() if k not in top}


def _comparable(obj: Obj) -> Obj:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def encode_continue(rv: int, key: Key) -> str:
    start = f"{key[0]}/{key[1]}" if key[0] else key[1]
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, Key]:
    try:
        pad = "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(token + pad))
        start = str(data["start"]).rstrip("\x00")
        rv = int(data["rv"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from exc
    if data.get("v") != "meta.k8s.io/v1":
        raise ApiError.bad_request("continue key is not valid: server does not recognize this encoded key")
    ns, _, name = start.rpartition("/")
    return rv, (ns, name)


class Store:
    """Thread-safe in-memory object store with Kubernetes API semantics.

    All public methods take/return plain JSON dicts and raise :class:`ApiError` for API errors.
    Objects handed out are copies unless stated otherwise; objects kept in the store are never
    mutated in place (every write stores a fresh dict), so history entries and list pages can
    share them safely.
    """

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
        for ns in DEFAULT_NAMESPACES:
            self.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

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

    # ------------------------------------------------------------------------------- reads --
    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        with self.lock:
            return clone(self._present(rt, self._require(rt, namespace, name)))

    def peek(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        """The stored object itself (do not mutate) or ``None``; no copy, for controllers."""
        with self.lock:
            return self._stored(rt, namespace, name)

    def iter_objects(self, rt: ResourceType, namespace: str | None = None) -> list[Obj]:
        """Stored objects (do not mutate) in key order, optionally in one namespace."""
        with self.lock:
            table = self._table(rt)
            if namespace and rt.namespaced:
                lo, hi = table.namespace_range(namespace)
            else:
                table.ensure_sorted()
                lo, hi = 0, len(table.keys)
            return [table.objects[k] for k in table.keys[lo:hi]]

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> Obj:
        """A ``<Kind>List`` body; pages by ``limit``/``continue`` over sorted keys."""
        try:
            lsel = parse_label_selector(label_selector)
            fsel = parse_field_selector(field_selector, rt.field_labels)
        except SelectorError as exc:
            raise ApiError.bad_request(str(exc)) from exc
        if limit < 0:
            raise ApiError.bad_request("limit must be non-negative")
        with self.lock:
            table = self._table(rt)
            table.ensure_sorted()
            keys = table.keys
            if namespace and rt.namespaced:
                lo, hi = table.namespace_range(namespace)
            else:
                lo, hi = 0, len(keys)
            start = lo
            if continue_token:
                _, last = decode_continue(continue_token)
                start = max(lo, bisect.bisect_right(keys, last, lo, hi))
            items: list[Obj] = []
            objects = table.objects
            last_index = -1
            has_more = False
            for i in range(start, hi):
                obj = objects[keys[i]]
                if (lsel.empty or lsel.matches((obj.get("metadata") or {}).get("labels"))) and (
                    fsel.empty or fsel.matches(obj)
                ):
                    if limit and len(items) >= limit:
                        has_more = True
                        break
                    items.append(obj)
                    last_index = i
            meta: Obj = {"resourceVersion": str(self._rv)}
            if has_more:
                meta["continue"] = encode_continue(self._rv, keys[last_index])
                if lsel.empty and fsel.empty:
                    meta["remainingItemCount"] = hi - last_index - 1
            body = {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version,
                "metadata": meta,
                "items": [self._present(rt, o) for o in items],
            }
            return body

    # ------------------------------------------------------------------------------ writes --
    def _stamp_new(self, rt: ResourceType, obj: Obj, namespace: str | None) -> Obj:
        meta = _meta(obj)
        for field in (
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "selfLink",
            "managedFields",
        ):
            meta.pop(field, None)
        if rt.namespaced:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        meta["uid"] = self._new_uid()
        meta["creationTimestamp"] = self.clock.timestamp()
        meta["generation"] = 1
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        return obj

    def _generate_name(self, rt: ResourceType, namespace: str | None, prefix: str) -> str:
        while True:
            name = prefix + "".join(self._rng.choice(_GENERATE_ALPHABET) for _ in range(5))
            if self._stored(rt, namespace, name) is None:
                return name

    def create(self, rt: ResourceType, namespace: str | None, body: Obj, *, dry_run: bool = False) -> Obj:
        """POST to a collection: 201 semantics (the HTTP layer sets the code)."""
        if not isinstance(body, dict):
            raise ApiError.bad_request("the request body must be a JSON object")
        with self.lock:
            obj = clone(body)
            meta = _meta(obj)
            body_api = obj.get("apiVersion")
            if body_api and body_api != rt.api_version:
                raise ApiError.bad_request(
                    f"the API version in the data ({body_api}) does not match the expected API version "
                    f"({rt.api_version})"
                )
            if obj.get("kind") and obj["kind"] != rt.kind:
                raise ApiError.bad_request(
                    f"the kind in the data ({obj['kind']}) does not match the expected kind ({rt.kind})"
                )
            if rt.namespaced:
                body_ns = meta.get("namespace")
                if body_ns and namespace and body_ns != namespace:
                    raise ApiError.bad_request(
                        "the namespace of the provided object does not match the namespace sent on the "
                        "request"
                    )
                namespace = namespace or body_ns or "default"
            name = meta.get("name") or ""
            if not name and meta.get("generateName"):
                name = self._generate_name(rt, namespace, str(meta["generateName"]))
                meta["name"] = name
            if not name:
                raise ApiError.invalid(
                    rt, "", "metadata.name", "Required value: name or generateName is required"
                )
            self._validate_name(rt, name)
            if rt.namespaced:
                assert namespace is not None
                self._check_namespace(rt, namespace, name)
            if self._stored(rt, namespace, name) is not None:
                raise ApiError.already_exists(rt, name)
            self._stamp_new(rt, obj, namespace)
            self._prepare_create(rt, obj)
            if dry_run:
                return obj
            self._commit(rt, obj, "ADDED", None)
            self._after_write(rt, None, obj)
            self._dispatch()
            return clone(obj)

    def _validate_name(self, rt: ResourceType, name: str) -> None:
        if len(name) > 253 or not _NAME_RE.match(name):
            raise ApiError.invalid(
                rt,
                name,
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            )

    def _prepare_create(self, rt: ResourceType, obj: Obj) -> None:
        """The create strategies of the registry: reset status, defaults."""
        if rt.has_status and rt.plural not in ("nodes", "namespaces"):
            obj.pop("status", None)
        if rt.plural == "namespaces" and rt.group == "":
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
        elif rt.plural == "pods" and rt.group == "":
            spec = obj.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("serviceAccountName", "default")
            obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
        elif rt.plural == "jobs" and rt.group == "batch":
            self._prepare_job(rt, obj)
        elif rt.plural == "customresourcedefinitions":
            spec = obj.get("spec") or {}
            names = spec.get("names") or {}
            expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
            if obj["metadata"]["name"] != expected:
                raise ApiError.invalid(
                    rt,
                    obj["metadata"]["name"],
                    "metadata.name",
                    f'Invalid value: must be spec.names.plural+"."+spec.group ({expected})',
                )
            obj["status"] = {
                "conditions": [
                    {
                        "type": "NamesAccepted",
                        "status": "True",
                        "reason": "NoConflicts",
                        "lastTransitionTime": self.clock.timestamp(),
                    },
                    {
                        "type": "Established",
                        "status": "True",
                        "reason": "InitialNamesAccepted",
                        "lastTransitionTime": self.clock.timestamp(),
                    },
                ],
                "acceptedNames": names,
                "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
            }

    def _prepare_job(self, rt: ResourceType, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        uid = obj["metadata"]["uid"]
        name = obj["metadata"]["name"]
        template = spec.setdefault("template", {})
        tspec = template.setdefault("spec", {})
        restart = tspec.get("restartPolicy")
        if restart not in ("Never", "OnFailure"):
            raise ApiError.invalid(
                rt,
                name,
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{restart or "Always"}": supported values: "OnFailure", "Never"',
            )
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        if not spec.get("manualSelector"):
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
            labels = template.setdefault("metadata", {}).setdefault("labels", {})
            labels.update(
                {
                    "batch.kubernetes.io/controller-uid": uid,
                    "batch.kubernetes.io/job-name": name,
                    "controller-uid": uid,
                    "job-name": name,
                }
            )

    def update(
        self, rt: ResourceType, namespace: str | None, name: str, body: Obj, *, subresource: str | None = None
    ) -> Obj:
        """PUT: optimistic concurrency on ``metadata.resourceVersion``; status subresource rules."""
        if not isinstance(body, dict):
            raise ApiError.bad_request("the request body must be a JSON object")
        with self.lock:
            old = self._require(rt, namespace, name)
            meta = body.get("metadata") or {}
            if meta.get("name") and meta["name"] != name:
                raise ApiError.bad_request(
                    f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
                )
            rv = meta.get("resourceVersion")
            if rv and str(rv) != old["metadata"]["resourceVersion"]:
                raise ApiError.conflict(
                    rt,
                    name,
                    _MODIFIED,
                )
            result = self._apply_update(rt, old, clone(body), subresource=subresource, from_api=True)
            self._dispatch()
            return clone(result)

    def _apply_update(
        self, rt: ResourceType, old: Obj, new: Obj, *, subresource: str | None, from_api: bool
    ) -> Obj:
        old_meta = old["metadata"]
        if subresource == "status":
            merged = clone(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        else:
            if from_api and rt.has_status:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            meta = _meta(new)
            for field in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            meta["name"] = old_meta["name"]
            if rt.namespaced:
                meta["namespace"] = old_meta["namespace"]
            else:
                meta.pop("namespace", None)
            if _without(new, "metadata", "status", "apiVersion", "kind") != _without(
                old, "metadata", "status", "apiVersion", "kind"
            ):
                meta["generation"] = int(old_meta.get("generation", 1)) + 1
        new["apiVersion"] = old.get("apiVersion", rt.api_version)
        new["kind"] = rt.kind
        if _comparable(new) == _comparable(old):
            return old  # no-op writes do not bump resourceVersion
        return self._write(rt, old, new)

    def _write(self, rt: ResourceType, old: Obj, new: Obj) -> Obj:
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(rt, new)
            return new
        self._commit(rt, new, "MODIFIED", old)
        self._after_write(rt, old, new)
        return new

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch_body: Any,
        content_type: str,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> tuple[Obj, bool]:
        """PATCH; returns ``(object, created)`` (``created`` only for server-side apply)."""
        ctype = content_type.split(";")[0].strip().lower()
        with self.lock:
            if ctype == APPLY_PATCH:
                if not field_manager:
                    raise ApiError.bad_request(
                        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                        "is required for apply patch"
                    )
                if not isinstance(patch_body, dict):
                    raise ApiError.bad_request("apply patch must be a YAML/JSON object")
                if self._stored(rt, namespace, name) is None:
                    body = clone(patch_body)
                    _meta(body).setdefault("name", name)
                    created = self.create(rt, namespace, body)
                    return created, True
            old = self._require(rt, namespace, name)
            base = clone(old)
            try:
                if ctype == MERGE_PATCH:
                    patched = json_merge_patch(base, patch_body)
                elif ctype == STRATEGIC_PATCH:
                    if rt.custom:
                        raise ApiError(
                            415,
                            "UnsupportedMediaType",
                            "the body of the request was in an unknown format - accepted media types "
                            f"include: {JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}",
                        )
                    patched = strategic_merge_patch(base, patch_body)
                elif ctype == JSON_PATCH:
                    patched = json_patch(base, patch_body)
                elif ctype == APPLY_PATCH:
                    patched = (
                        json_merge_patch(base, patch_body)
                        if rt.custom
                        else strategic_merge_patch(base, patch_body)
                    )
                else:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        f"the body of the request was in an unknown format - {content_type}",
                    )
            except PatchError as exc:
                raise ApiError(
                    422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
                ) from exc
            if not isinstance(patched, dict):
                raise ApiError.bad_request("patch must produce an object")
            want_rv = (
                (patch_body.get("metadata") or {}).get("resourceVersion")
                if isinstance(patch_body, dict)
                else None
            )
            if want_rv and str(want_rv) != old["metadata"]["resourceVersion"]:
                raise ApiError.conflict(
                    rt,
                    name,
                    _MODIFIED,
                )
            result = self._apply_update(rt, old, patched, subresource=subresource, from_api=True)
            self._dispatch()
            return clone(result), False

    def delete(
        self, rt: ResourceType, namespace: str | None, name: str, options: Mapping[str, Any] | None = None
    ) -> tuple[int, Obj]:
        """DELETE: returns ``(http_code, body)`` like the apiserver's delete handler."""
        opts = dict(options or {})
        with self.lock:
            obj = self._require(rt, namespace, name)
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"].get("uid"):
                raise ApiError.conflict(
                    rt,
                    name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, "
                    f"UID in object meta: {obj['metadata'].get('uid')}",
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise ApiError.conflict(
                    rt,
                    name,
                    _MODIFIED,
                )
            if opts.get("dryRun"):
                return 200, clone(obj)
            orphan = opts.get("orphanDependents")
            policy = opts.get("propagationPolicy") or (
                ("Orphan" if orphan else "Background") if orphan is not None else rt.default_propagation
            )
            if policy not in ("Background", "Foreground", "Orphan"):
                raise ApiError.bad_request(f"propagationPolicy: Unsupported value: {policy!r}")
            final = self._delete(rt, obj, policy)
            self._dispatch()
            code = 202 if (final is not None and orphan is False) else 200
            if final is not None:  # still present (finalizers), or a namespace now Terminating
                return code, clone(self._present(rt, final))
            if rt.return_deleted_object:
                return 200, clone(self._present(rt, obj))
            details: Obj = {"name": name, "kind": rt.plural, "uid": obj["metadata"].get("uid", "")}
            if rt.group:
                details["group"] = rt.group
            return 200, {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }

    def _delete(self, rt: ResourceType, obj: Obj, policy: str) -> Obj | None:
        """Delete one stored object; returns the still-present object, or None once removed."""
        uid = obj["metadata"].get("uid", "")
        if rt.plural == "namespaces" and rt.group == "":
            return self._delete_namespace(rt, obj)
        if policy == "Orphan":
            self._orphan_dependents(uid)
        new: Obj | None = None
        dependents = bool(self._dependents.get(uid))
        if policy == "Foreground" and dependents:
            new = clone(obj)
            fins = _meta(new).setdefault("finalizers", [])
            if "foregroundDeletion" not in fins:
                fins.append("foregroundDeletion")
        if (new or obj)["metadata"].get("finalizers"):
            if new is None:
                new = clone(obj)
            if not new["metadata"].get("deletionTimestamp"):
                new["metadata"]["deletionTimestamp"] = self.clock.timestamp()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
            if _comparable(new) != _comparable(obj):
                self._commit(rt, new, "MODIFIED", obj)
                self._after_write(rt, obj, new)
            else:
                new = obj
            if policy == "Foreground":
                self._delete_dependents(uid, "Background")
                current = self._stored(rt, new["metadata"].get("namespace"), new["metadata"]["name"])
                return current
            return new
        self._remove(rt, obj)
        return None

    def _remove(self, rt: ResourceType, obj: Obj) -> None:
        """Final removal: DELETED event, GC of dependents, namespace/CRD follow-ups."""
        stored = self._stored(rt, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if stored is None:
            return
        final = clone(obj)
        if not final["metadata"].get("deletionTimestamp"):
            final["metadata"]["deletionTimestamp"] = self.clock.timestamp()
        self._commit(rt, final, "DELETED", stored)
        meta = final["metadata"]
        uid = meta.get("uid", "")
        if rt.plural == "pods" and rt.group == "":
            for key in [k for k in self.logs if k[0] == meta.get("namespace") and k[1] == meta["name"]]:
                del self.logs[key]
            for key in [
                k for k in self.previous_logs if k[0] == meta.get("namespace") and k[1] == meta["name"]
            ]:
                del self.previous_logs[key]
        if rt.plural == "customresourcedefinitions":
            self._unregister_crd(meta["name"])
        self._delete_dependents(uid, "Background")
        # owners waiting in foreground deletion may now be free to go
        for ref in meta.get("ownerReferences") or []:
            self._maybe_finish_foreground(str(ref.get("uid", "")))
        if rt.namespaced:
            self._maybe_finish_namespace(meta.get("namespace", ""))

    def _delete_dependents(self, uid: str, policy: str) -> None:
        for storage_key, ns, name in sorted(self._dependents.get(uid, set())):
            dep_rt = self._any_type(storage_key)
            dep = self._stored(dep_rt, ns, name) if dep_rt else None
            if dep_rt is None or dep is None or dep["metadata"].get("deletionTimestamp"):
                continue
            refs = [r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if any(self._uid_exists(str(r.get("uid", ""))) for r in refs):
                new = clone(dep)
                new["metadata"]["ownerReferences"] = refs
                self._commit(dep_rt, new, "MODIFIED", dep)
                continue
            self._delete(dep_rt, dep, policy)

    def _orphan_dependents(self, uid: str) -> None:
        for storage_key, ns, name in sorted(self._dependents.get(uid, set())):
            dep_rt = self._any_type(storage_key)
            dep = self._stored(dep_rt, ns, name) if dep_rt else None
            if dep_rt is None or dep is None:
                continue
            new = clone(dep)
            refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self._commit(dep_rt, new, "MODIFIED", dep)
            self._after_write(dep_rt, dep, new)

    def _maybe_finish_foreground(self, uid: str) -> None:
        if not uid or self._dependents.get(uid):
            return
        where = self._by_uid.get(uid)
        if where is None:
            return
        rt = self._any_type(where[0])
        obj = self._table(rt).objects.get((where[1], where[2])) if rt else None
        if rt is None or obj is None:
            return
        meta = obj["metadata"]
        if "foregroundDeletion" in (meta.get("finalizers") or []):
            new = clone(obj)
            new["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != "foregroundDeletion"]
            if not new["metadata"]["finalizers"]:
                del new["metadata"]["finalizers"]
            self._write(rt, obj, new)

    def _uid_exists(self, uid: str) -> bool:
        return bool(uid) and uid in self._by_uid

    def _any_type(self, storage_key: tuple[str, str]) -> ResourceType | None:
        for (g, _, p), rt in self._types.items():
            if (g, p) == storage_key:
                return rt
        return None

    def _delete_namespace(self, rt: ResourceType, obj: Obj) -> Obj | None:
        name = obj["metadata"]["name"]
        current = obj
        if not obj["metadata"].get("deletionTimestamp"):
            new = clone(obj)
            new["metadata"]["deletionTimestamp"] = self.clock.timestamp()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            self._commit(rt, new, "MODIFIED", obj)
            current = new
            seen: set[tuple[str, str]] = set()
            for other in list(self._types.values()):
                if not other.namespaced or other.storage_key in seen:
                    continue
                seen.add(other.storage_key)
                table = self._table(other)
                lo, hi = table.namespace_range(name)
                for key in list(table.keys[lo:hi]):
                    child = table.objects.get(key)
                    if child is not None and not child["metadata"].get("deletionTimestamp"):
                        self._delete(other, child, "Background")
        self._maybe_finish_namespace(name)
        return current

    def _maybe_finish_namespace(self, namespace: str) -> None:
        ns_rt = self._types[("", "v1", "namespaces")]
        ns = self._stored(ns_rt, None, namespace)
        if ns is None or not ns["metadata"].get("deletionTimestamp") or ns["metadata"].get("finalizers"):
            return
        for storage_key, table in self._tables.items():
            if storage_key == ("", "namespaces"):
                continue
            lo, hi = table.namespace_range(namespace)
            if hi > lo:
                return
        final = clone(ns)
        final.setdefault("spec", {})["finalizers"] = []
        self._remove(ns_rt, final)

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

    def _unregister_crd(self, name: str) -> None:
        types = self._crd_types.pop(name, [])
        if not types:
            return
        rt = types[0]
        table = self._tables.get(rt.storage_key)
        if table is not None:
            for key in list(table.keys):
                obj = table.objects.get(key)
                if obj is not None:
                    self._remove(rt, obj)
            self._tables.pop(rt.storage_key, None)
        for t in types:
            self._types.pop((t.group, t.version, t.plural), None)

    # ------------------------------------------------------------------- test/controller API --
    def add(self, obj: Obj) -> Obj:
        """Create-or-replace ``obj`` as-is (status kept), bypassing API strategies.

        Fills ``uid``/``creationTimestamp``/``resourceVersion``, creates a missing namespace,
        runs controllers (the simulator) like any other write. Returns a copy of the stored
        object.
        """
        with self.lock:
            rt = self.resolve(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
            new = clone(obj)
            meta = _meta(new)
            name = meta.get("name") or ""
            if not name and meta.get("generateName"):
                name = meta["name"] = self._generate_name(
                    rt, meta.get("namespace"), str(meta["generateName"])
                )
            if not name:
                raise ApiError.invalid(
                    rt, "", "metadata.name", "Required value: name or generateName is required"
                )
            ns = meta.get("namespace") or ("default" if rt.namespaced else None)
            if rt.namespaced and ns and self._stored(self._types[("", "v1", "namespaces")], None, ns) is None:
                self.add(
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": ns},
                        "status": {"phase": "Active"},
                    }
                )
            old = self._stored(rt, ns, name)
            if old is None:
                keep = {k: meta[k] for k in ("generation",) if k in meta}
                self._stamp_new(rt, new, ns)
                meta = new["metadata"]
                meta.update(keep)
                if rt.plural == "namespaces" and rt.group == "":
                    new.setdefault("spec", {"finalizers": ["kubernetes"]})
                    new.setdefault("status", {"phase": "Active"})
                self._commit(rt, new, "ADDED", None)
                self._after_write(rt, None, new)
                result = new
            else:
                result = self._apply_update(rt, old, new, subresource=None, from_api=False)
            self._dispatch()
            return clone(result)

    def bulk_add(self, objects: builtins.list[Obj]) -> int:
        """Fast seeding path: the store takes ownership of ``objects`` (no copies).

        Objects must not exist yet; namespaces referenced must exist (or be in ``objects``
        before their contents). Each object still gets uid/creationTimestamp/resourceVersion and
        an ``ADDED`` history entry, but controllers (listeners) are *not* run. Returns the
        number of objects added.
        """
        with self.lock:
            ts = self.clock.timestamp()
            at = self.clock.time()
            types: dict[tuple[str, str], ResourceType] = {}
            for obj in objects:
                tkey = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
                rt = types.get(tkey)
                if rt is None:
                    rt = types[tkey] = self.resolve(*tkey)
                meta = _meta(obj)
                if rt.namespaced:
                    meta.setdefault("namespace", "default")
                meta["uid"] = self._new_uid()
                meta.setdefault("creationTimestamp", ts)
                self._rv += 1
                meta["resourceVersion"] = str(self._rv)
                key = self._key(rt, meta.get("namespace"), meta["name"])
                self._table(rt).put(key, obj)
                self._by_uid[meta["uid"]] = (rt.storage_key, key[0], key[1])
                if meta.get("ownerReferences"):
                    self._index_owners(rt, key, None, obj)
                self._history.append(WatchEvent(self._rv, "ADDED", rt.storage_key, key[0], obj, None, at))
            if len(self._history) > 2 * self._history_size:
                drop = len(self._history) - self._history_size
                self._compacted_rv = self._history[drop - 1].rv
                del self._history[:drop]
            self.cond.notify_all()
            return len(objects)

    def mutate(
        self, rt: ResourceType, namespace: str | None, name: str, fn: Callable[[Obj], None]
    ) -> Obj | None:
        """Controller write: apply ``fn`` to a copy of the object (status included) and store it.

        Returns the stored object (do not mutate), or None when the object does not exist.
        No-op mutations do not bump the resourceVersion.
        """
        with self.lock:
            old = self._stored(rt, namespace, name)
            if old is None:
                return None
            new = clone(old)
            fn(new)
            result = self._apply_update(rt, old, new, subresource=None, from_api=False)
            self._dispatch()
            return result

    def remove(self, rt: ResourceType, namespace: str | None, name: str, policy: str = "Background") -> None:
        """Controller delete (no HTTP options); honours finalizers."""
        with self.lock:
            obj = self._stored(rt, namespace, name)
            if obj is not None:
                self._delete(rt, obj, policy)
                self._dispatch()

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Obj:
        with self.lock:
            listing = self.list(rt, namespace, label_selector=label_selector, field_selector=field_selector)
            for item in listing["items"]:
                meta = item["metadata"]
                with contextlib.suppress(ApiError):
                    self.delete(rt, meta.get("namespace"), meta["name"], options)
            listing["metadata"] = {"resourceVersion": str(self._rv)}
            return listing

    # -------------------------------------------------------------------------------- logs --
    def append_log(
        self, namespace: str, pod: str, container: str, text: str, *, previous: bool = False
    ) -> None:
        with self.lock:
            target = self.previous_logs if previous else self.logs
            key = (namespace, pod, container)
            target[key] = target.get(key, "") + text
            self._log_writes += 1
            self.cond.notify_all()

    def set_log(self, namespace: str, pod: str, container: str, text: str, *, previous: bool = False) -> None:
        with self.lock:
            (self.previous_logs if previous else self.logs)[(namespace, pod, container)] = text
            self._log_writes += 1
            self.cond.notify_all()

    # ------------------------------------------------------------------------------- watch --
    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: float | None = None,
        stopped: Callable[[], bool] = lambda: False,
        poll: float = 0.2,
    ) -> Iterator[Obj]:
        """Yield watch events (``{"type": ..., "object": ...}``) until the timeout or ``stopped()``.

        The timeout is honoured on both the store's clock (so advancing a FakeClock ends a watch
        deterministically) and the wall clock (so a watch never outlives its ``timeoutSeconds``).
        """
        try:
            lsel = parse_label_selector(label_selector)
            fsel = parse_field_selector(field_selector, rt.field_labels)
        except SelectorError as exc:
            raise ApiError.bad_request(str(exc)) from exc
        ns = namespace if (namespace and rt.namespaced) else None
        initial: list[Obj] = []
        with self.lock:
            if resource_version in (None, "", "0"):
                pos = self._rv
                for obj in self.iter_objects(rt, ns):
                    if self._matches(obj, lsel, fsel):
                        initial.append({"type": "ADDED", "object": self._present(rt, obj)})
            else:
                try:
                    pos = int(str(resource_version))
                except ValueError as exc:
                    raise ApiError.bad_request(f"invalid resource version: {resource_version}") from exc
            fake_deadline = self.clock.time() + timeout_seconds if timeout_seconds else None
        real_deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
        yield from initial
        delivered = bool(initial)
        while not stopped():
            out: list[Obj] = []
            finished = False
            with self.lock:
                if pos < self._compacted_rv:
                    out.append(self.expired_event(pos))
                    finished = True
                else:
                    idx = bisect.bisect_right(self._history, pos, key=lambda e: e.rv)
                    fake_expired = False
                    for ev in self._history[idx:]:
                        if fake_deadline is not None and ev.at > fake_deadline:
                            fake_expired = True
                            break
                        pos = ev.rv
                        if ev.storage_key != rt.storage_key or (ns is not None and ev.namespace != ns):
                            continue
                        translated = self._translate(ev, lsel, fsel)
                        if translated is not None:
                            out.append({"type": translated, "object": self._present(rt, ev.obj)})
                    if not out:
                        if fake_expired or (fake_deadline is not None and self.clock.time() >= fake_deadline):
                            return
                        if real_deadline is not None and time.monotonic() >= real_deadline:
                            return
                        left = poll if real_deadline is None else min(poll, real_deadline - time.monotonic())
                        self.wait_for_change(
                            left, deadline=fake_deadline, stopped=stopped, delivered=delivered
                        )
                        delivered = False
                        continue
            yield from out
            delivered = True
            if finished:
                return

    def expired_event(self, rv: int) -> Obj:
        err = ApiError.gone(f"too old resource version: {rv} ({self._compacted_rv + 1})")
        return {"type": "ERROR", "object": err.status()}

    @staticmethod
    def _matches(obj: Obj | None, lsel: LabelSelector, fsel: FieldSelector) -> bool:
        if obj is None:
            return False
        return (lsel.empty or lsel.matches((obj.get("metadata") or {}).get("labels"))) and (
            fsel.empty or fsel.matches(obj)
        )

    def _translate(self, ev: WatchEvent, lsel: LabelSelector, fsel: FieldSelector) -> str | None:
        if ev.type != "MODIFIED" or (lsel.empty and fsel.empty):
            return ev.type if self._matches(ev.obj, lsel, fsel) else None
        was, now = self._matches(ev.old, lsel, fsel), self._matches(ev.obj, lsel, fsel)
        if was and now:
            return "MODIFIED"
        if now:
            return "ADDED"
        if was:
            return "DELETED"
        return None


def _qos_class(spec: Mapping[str, Any]) -> str:
    requests_any = False
    guaranteed = True
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_any = True
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
