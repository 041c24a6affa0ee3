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

import builtins
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from aicr_pytest.testing.clock import TimerClock
from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.store.errors import ApiError
from aicr_pytest.testing.store.objects import (
    APPLY_PATCH,
    DEFAULT_NAMESPACES,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    Key,
    Obj,
    WatchEvent,
    _meta,
    clone,
)
from aicr_pytest.testing.store.reads import decode_continue, encode_continue
from aicr_pytest.testing.store.watch import _Watch

__all__ = [
    "APPLY_PATCH",
    "DEFAULT_NAMESPACES",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_PATCH",
    "ApiError",
    "Key",
    "Obj",
    "Store",
    "WatchEvent",
    "clone",
    "decode_continue",
    "encode_continue",
]


class Store(_Watch):
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
        super().__init__(clock, history_size=history_size, seed=seed, version=version)
        for ns in DEFAULT_NAMESPACES:
            self.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

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
