"""``SubjectAccessReview`` on the fake API server: RBAC evaluated over the stored roles and bindings.

The fake has no authorizer of its own (every client may do anything); a review, though, asks what a
*subject* may do, and a check may ask it (``secure-accelerator-access`` asks for
``system:anonymous``). The answer is what kube-apiserver's RBAC authorizer would give from the
ClusterRoles/Roles and their bindings in the store: allowed when a binding names the user or one of
its groups and the bound role has a rule matching the verb, API group, resource (``plural`` or
``plural/subresource``) and name -- ``*`` matching anything. Non-resource URLs match
``nonResourceURLs`` (a trailing ``*`` is a prefix). Nothing else grants anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from aicr_pytest.testing.store import Obj, Store

__all__ = ["REVIEW_PATH", "review_access"]

REVIEW_PATH: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
RBAC: Final = "rbac.authorization.k8s.io/v1"


def _objects(store: Store, kind: str, namespace: str | None = None) -> list[Obj]:
    rt = store.resolve(RBAC, kind)
    return list(store.iter_objects(rt, namespace))


def _subject_matches(subject: Mapping[str, Any], user: str, groups: Iterable[str]) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    return (kind == "User" and name == user) or (kind == "Group" and name in set(groups))


def _matches(values: Iterable[Any], wanted: str) -> bool:
    return any(v == "*" or v == wanted for v in values)


def _rule_allows(
    rule: Mapping[str, Any], attrs: Mapping[str, Any], non_resource: Mapping[str, Any] | None
) -> bool:
    if non_resource is not None:
        path, verb = str(non_resource.get("path") or ""), str(non_resource.get("verb") or "")
        urls = [str(u) for u in rule.get("nonResourceURLs") or []]
        url_ok = any(u == path or u == "*" or (u.endswith("*") and path.startswith(u[:-1])) for u in urls)
        return url_ok and _matches(rule.get("verbs") or [], verb)
    resource = str(attrs.get("resource") or "")
    if attrs.get("subresource"):
        resource += f"/{attrs['subresource']}"
    names = rule.get("resourceNames") or []
    return (
        _matches(rule.get("verbs") or [], str(attrs.get("verb") or ""))
        and _matches(rule.get("apiGroups") or [], str(attrs.get("group") or ""))
        and _matches(rule.get("resources") or [], resource)
        and (not names or str(attrs.get("name") or "") in names)
    )


def _role_rules(store: Store, ref: Mapping[str, Any], namespace: str | None) -> list[Mapping[str, Any]]:
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    roles = _objects(store, kind, namespace if kind == "Role" else None)
    role = next((r for r in roles if r["metadata"].get("name") == name), None)
    return list((role or {}).get("rules") or [])


def review_access(store: Store, review: Mapping[str, Any]) -> Obj:
    """The review with ``status.allowed`` (and a ``reason`` naming the binding when allowed)."""
    spec = review.get("spec") or {}
    user, groups = str(spec.get("user") or ""), [str(g) for g in spec.get("groups") or []]
    attrs = spec.get("resourceAttributes") or {}
    non_resource = spec.get("nonResourceAttributes")
    namespace = str(attrs.get("namespace") or "") or None
    bindings: list[tuple[Obj, str | None]] = [(b, None) for b in _objects(store, "ClusterRoleBinding")]
    if namespace and non_resource is None:
        bindings += [(b, namespace) for b in _objects(store, "RoleBinding", namespace)]
    reason = ""
    for binding, ns in bindings:
        if not any(_subject_matches(s, user, groups) for s in binding.get("subjects") or []):
            continue
        if any(
            _rule_allows(r, attrs, non_resource) for r in _role_rules(store, binding.get("roleRef") or {}, ns)
        ):
            kind = "RoleBinding" if ns else "ClusterRoleBinding"
            reason = f'RBAC: allowed by {kind} "{binding["metadata"]["name"]}"'
            break
    status: Obj = {"allowed": bool(reason)}
    if reason:
        status["reason"] = reason
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "metadata": {"creationTimestamp": None},
        "spec": dict(spec),
        "status": status,
    }
