"""Replay requests against a real authorizer: would the least-privilege user be allowed each one?

The fake API server has no authorizer, so a check that runs green on the fake says nothing about
``deploy/rbac.yaml``. Every request the fake served is recorded (method, path, query); this module turns
each into the attributes kube-apiserver's authorizer sees (the apiserver's ``RequestInfo``: verb,
API group, resource, subresource, namespace, name -- or a non-resource URL) and asks a real
kube-apiserver, as the least-privilege user, with a ``SelfSubjectAccessReview``. A denial is exactly
the 403 the check would get on a cluster where only ``deploy/rbac.yaml`` is bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = ["RequestAttributes", "denied", "request_attributes", "self_review"]

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, order=True)
class RequestAttributes:
    """What the authorizer sees of one request (``resource == ""``: a non-resource URL ``path``)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def is_resource_request(self) -> bool:
        return bool(self.resource)

    def key(self) -> tuple[str, str, str, str, bool]:
        """Identity for deduplication (names do not matter to a ClusterRole)."""
        return (self.verb, self.group, self.resource, self.subresource or self.path, bool(self.namespace))

    def __str__(self) -> str:
        if not self.is_resource_request:
            return f"{self.verb} {self.path}"
        what = self.resource + (f"/{self.subresource}" if self.subresource else "")
        what += f".{self.group}" if self.group else ""
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"{self.verb} {what}{where}"


def request_attributes(
    method: str, path: str, query: str = "", *, watch: bool | None = None
) -> RequestAttributes:
    """The authorizer attributes of ``method path?query`` (kube-apiserver's ``RequestInfoFactory``)."""
    method = method.upper()
    params = parse_qs(query)
    is_watch = watch if watch is not None else params.get("watch", ["false"])[0] in ("true", "1")
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        rest = []
        group = ""
    if not rest:  # /version, /api, /api/v1, /apis, /apis/<group>[/<version>]: discovery
        return RequestAttributes(verb=_non_resource_verb(method), path=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) == 3 and rest[2] in ("status", "finalize"):
        namespace = rest[1]  # subresources of the namespace object
    elif rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces" and len(rest) == 2:
        namespace = rest[1]  # the namespace object itself: resource namespaces, name <ns>
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if method in ("GET", "HEAD"):
        verb = "watch" if is_watch else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return RequestAttributes(
        verb=verb,
        group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def _non_resource_verb(method: str) -> str:
    return {
        "GET": "get",
        "HEAD": "get",
        "POST": "post",
        "PUT": "put",
        "PATCH": "patch",
        "DELETE": "delete",
    }.get(method, method.lower())


def self_review(cp: ControlPlane, attrs: RequestAttributes) -> tuple[bool, str]:
    """``SelfSubjectAccessReview`` as the least-privilege user: (allowed, the authorizer's reason)."""
    spec: dict[str, Any]
    if attrs.is_resource_request:
        resource: dict[str, str] = {"verb": attrs.verb, "group": attrs.group, "resource": attrs.resource}
        if attrs.subresource:
            resource["subresource"] = attrs.subresource
        if attrs.namespace:
            resource["namespace"] = attrs.namespace
        if attrs.name:
            resource["name"] = attrs.name
        spec = {"resourceAttributes": resource}
    else:
        spec = {"nonResourceAttributes": {"verb": attrs.verb, "path": attrs.path}}
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec}
    answer = cp.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, admin=False)
    status = answer.get("status") or {}
    return bool(status.get("allowed")), str(status.get("reason") or status.get("evaluationError") or "")


def denied(cp: ControlPlane, requests: Iterable[RequestAttributes]) -> list[str]:
    """Every distinct request the least-privilege user would be refused, described."""
    seen: dict[tuple[str, str, str, str, bool], RequestAttributes] = {}
    for attrs in requests:
        seen.setdefault(attrs.key(), attrs)
    out: list[str] = []
    for attrs in sorted(seen.values()):
        allowed, reason = self_review(cp, attrs)
        if not allowed:
            out.append(f"{attrs}" + (f" ({reason})" if reason else ""))
    return out
