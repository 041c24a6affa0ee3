"""Deletion: finalizers, garbage collection by ownerReferences, namespace and CRD removal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.store.errors import ApiError
from aicr_pytest.testing.store.objects import (
    _MODIFIED,
    Obj,
    _comparable,
    _meta,
    clone,
)
from aicr_pytest.testing.store.reads import _Reads


class _Deletion(_Reads):
    """DELETE, finalizers, garbage collection of dependents, namespace and CRD removal."""

    def _write(self, rt: ResourceType, old: Obj, new: Obj) -> Obj:
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(rt, new)
            return new
        self._commit(rt, new, "MODIFIED", old)
        self._after_write(rt, old, new)
        return new

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
