"""Which REST path serves which kind: a small table for the kinds we use, discovery for the rest.

Kubernetes serves every resource at
``/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]`` (core group) or
``/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]`` (named groups)
(API concepts, "Resource URIs"). The facade routes core, batch, RBAC, DRA and custom resources
through this one mapping, so all of them share one request path, one retry policy and one
permission recorder.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class ResourceType:
    """One REST resource: ``group``/``version``/``plural``, its ``kind`` and whether it is namespaced."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise (the ``apiVersion`` field)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base_path(self) -> str:
        """``/api/v1`` or ``/apis/{group}/{version}``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """REST path of the collection (``name`` None) or of one object (optionally a subresource).

        ``namespace`` None on a namespaced type addresses the cross-namespace collection (list and
        watch only).
        """
        parts = [self.base_path]
        if self.namespaced and namespace is not None:
            parts += ["namespaces", quote(namespace, safe="")]
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def rbac_resource(self, subresource: str | None = None) -> str:
        """The resource name RBAC rules use: ``pods``, ``pods/log``, ``jobs/status``..."""
        return f"{self.plural}/{subresource}" if subresource else self.plural


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` → ``("apps", "v1")``; ``"v1"`` → ``("", "v1")``."""
    group, sep, version = api_version.rpartition("/")
    if not sep:
        return "", api_version
    return group, version


# (group, kind, plural, namespaced). The version comes from the caller's apiVersion so the same row
# serves e.g. resource.k8s.io v1beta1, v1beta2 and v1.
_KNOWN: tuple[tuple[str, str, str, bool], ...] = (
    ("", "Namespace", "namespaces", False),
    ("", "Node", "nodes", False),
    ("", "Pod", "pods", True),
    ("", "ConfigMap", "configmaps", True),
    ("", "Secret", "secrets", True),
    ("", "Service", "services", True),
    ("", "ServiceAccount", "serviceaccounts", True),
    ("", "Event", "events", True),
    ("", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    ("", "PersistentVolume", "persistentvolumes", False),
    ("events.k8s.io", "Event", "events", True),
    ("batch", "Job", "jobs", True),
    ("batch", "CronJob", "cronjobs", True),
    ("apps", "Deployment", "deployments", True),
    ("apps", "DaemonSet", "daemonsets", True),
    ("apps", "StatefulSet", "statefulsets", True),
    ("apps", "ReplicaSet", "replicasets", True),
    ("rbac.authorization.k8s.io", "Role", "roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", True),
    ("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", False),
    ("storage.k8s.io", "StorageClass", "storageclasses", False),
    ("resource.k8s.io", "ResourceClaim", "resourceclaims", True),
    ("resource.k8s.io", "ResourceClaimTemplate", "resourceclaimtemplates", True),
    ("resource.k8s.io", "ResourceSlice", "resourceslices", False),
    ("resource.k8s.io", "DeviceClass", "deviceclasses", False),
    ("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", False),
    ("scheduling.k8s.io", "PriorityClass", "priorityclasses", False),
    ("node.k8s.io", "RuntimeClass", "runtimeclasses", False),
    ("discovery.k8s.io", "EndpointSlice", "endpointslices", True),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
)

_BY_KIND: dict[tuple[str, str], tuple[str, str, bool]] = {
    (group, kind.lower()): (kind, plural, namespaced) for group, kind, plural, namespaced in _KNOWN
}
_BY_PLURAL: dict[tuple[str, str], tuple[str, str, bool]] = {
    (group, plural): (kind, plural, namespaced) for group, kind, plural, namespaced in _KNOWN
}


def lookup_builtin(api_version: str, kind_or_plural: str) -> ResourceType | None:
    """Resolve ``(apiVersion, Kind or plural)`` from the built-in table, or None if not listed."""
    group, version = split_api_version(api_version)
    key = (group, kind_or_plural.lower())
    hit = _BY_KIND.get(key) or _BY_PLURAL.get(key)
    if hit is None:
        return None
    kind, plural, namespaced = hit
    return ResourceType(group=group, version=version, plural=plural, kind=kind, namespaced=namespaced)


def builtin_types() -> tuple[ResourceType, ...]:
    """Every built-in row at its usual version (for documentation and the RBAC test)."""
    default_version = {
        "": "v1",
        "batch": "v1",
        "apps": "v1",
        "rbac.authorization.k8s.io": "v1",
        "storage.k8s.io": "v1",
        "resource.k8s.io": "v1",
        "apiextensions.k8s.io": "v1",
        "events.k8s.io": "v1",
        "scheduling.k8s.io": "v1",
        "node.k8s.io": "v1",
        "discovery.k8s.io": "v1",
        "admissionregistration.k8s.io": "v1",
    }
    return tuple(
        ResourceType(group, default_version[group], plural, kind, namespaced)
        for group, kind, plural, namespaced in _KNOWN
    )


__all__ = ["ResourceType", "builtin_types", "lookup_builtin", "split_api_version"]
