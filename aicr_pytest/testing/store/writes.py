"""Writes: create (strategies and defaults), update (optimistic concurrency, status subresource) and patch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aicr_pytest.testing.patch import PatchError, json_merge_patch, json_patch, strategic_merge_patch
from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.store.deletion import _Deletion
from aicr_pytest.testing.store.errors import ApiError
from aicr_pytest.testing.store.objects import (
    _GENERATE_ALPHABET,
    _MODIFIED,
    _NAME_RE,
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    Obj,
    _comparable,
    _meta,
    _without,
    clone,
)


class _Writes(_Deletion):
    """POST/PUT/PATCH semantics: create strategies, optimistic concurrency, the status subresource."""

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
