"""Resource types the fake API server knows: built-ins plus CRD-backed custom resources.

Built-in types are served from the start (the subset our checks and their tests touch);
custom resources appear in discovery and become servable when a ``CustomResourceDefinition``
(``apiextensions.k8s.io/v1``) is created, and disappear when it is deleted, like the real
apiextensions-apiserver
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ALL_VERBS", "BUILTIN_TYPES", "ResourceType", "builtin_types", "types_from_crd"]

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)

COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True)
class ResourceType:
    """One resource (``group``/``version``/``plural``) as discovery describes it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    field_labels: frozenset[str] = COMMON_FIELDS
    custom: bool = False
    # Object kinds that a DELETE answers with the object rather than a Status
    # (genericregistry.Store.ReturnDeletedObject).
    return_deleted_object: bool = False
    # Default propagation when the DELETE names none ("Background" or "Orphan").
    default_propagation: str = "Background"
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``pods`` / ``jobs.batch``: how error messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def discovery_entries(self) -> list[dict[str, Any]]:
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular or self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        out = [main]
        for sub in self.subresources:
            verbs = (
                ["get"]
                if sub == "log"
                else (["create"] if sub in ("binding", "eviction") else ["get", "patch", "update"])
            )
            kind = {"log": "Pod", "binding": "Binding", "eviction": "Eviction", "scale": "Scale"}.get(
                sub, self.kind
            )
            out.append(
                {
                    "name": f"{self.plural}/{sub}",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
        return out


def _t(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    *,
    short: Iterable[str] = (),
    sub: Iterable[str] = (),
    fields: Iterable[str] = (),
    ret: bool = False,
    propagation: str = "Background",
    verbs: tuple[str, ...] = ALL_VERBS,
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=tuple(short),
        subresources=tuple(sub),
        field_labels=COMMON_FIELDS | frozenset(fields),
        return_deleted_object=ret,
        default_propagation=propagation,
        verbs=verbs,
    )


_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_NS_VERBS: tuple[str, ...] = ("create", "delete", "get", "list", "patch", "update", "watch")

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    # core/v1
    _t(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        short=["ns"],
        sub=["status", "finalize"],
        fields=["status.phase"],
        verbs=_NS_VERBS,
    ),
    _t("", "v1", "nodes", "Node", False, short=["no"], sub=["status"], fields=["spec.unschedulable"]),
    _t(
        "",
        "v1",
        "pods",
        "Pod",
        short=["po"],
        sub=["status", "log", "binding", "eviction"],
        fields=_POD_FIELDS,
        ret=True,
    ),
    _t("", "v1", "services", "Service", short=["svc"], sub=["status"]),
    _t("", "v1", "endpoints", "Endpoints", short=["ep"]),
    _t("", "v1", "configmaps", "ConfigMap", short=["cm"]),
    _t("", "v1", "secrets", "Secret", fields=["type"]),
    _t("", "v1", "serviceaccounts", "ServiceAccount", short=["sa"], ret=True),
    _t("", "v1", "events", "Event", short=["ev"], fields=_EVENT_FIELDS),
    _t("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short=["pvc"], sub=["status"]),
    _t("", "v1", "persistentvolumes", "PersistentVolume", False, short=["pv"], sub=["status"]),
    _t("", "v1", "resourcequotas", "ResourceQuota", short=["quota"], sub=["status"]),
    _t("", "v1", "limitranges", "LimitRange", short=["limits"]),
    # apps/v1
    _t("apps", "v1", "deployments", "Deployment", short=["deploy"], sub=["status", "scale"]),
    _t("apps", "v1", "daemonsets", "DaemonSet", short=["ds"], sub=["status"]),
    _t("apps", "v1", "statefulsets", "StatefulSet", short=["sts"], sub=["status", "scale"]),
    _t("apps", "v1", "replicasets", "ReplicaSet", short=["rs"], sub=["status", "scale"]),
    _t("apps", "v1", "controllerrevisions", "ControllerRevision"),
    # batch/v1 -- the batch/v1 REST default for Jobs is to orphan their pods.
    _t("batch", "v1", "jobs", "Job", sub=["status"], fields=["status.successful"], propagation="Orphan"),
    _t("batch", "v1", "cronjobs", "CronJob", short=["cj"], sub=["status"]),
    # rbac
    _t("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    # apiextensions
    _t(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        short=["crd", "crds"],
        sub=["status"],
    ),
    # misc groups checks read
    _t("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short=["sc"], ret=True),
    _t("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _t("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short=["pc"]),
    _t("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
    _t("coordination.k8s.io", "v1", "leases", "Lease"),
    _t("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short=["pdb"], sub=["status"]),
    _t("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short=["netpol"]),
    _t("networking.k8s.io", "v1", "ingresses", "Ingress", short=["ing"], sub=["status"]),
    _t("events.k8s.io", "v1", "events", "Event", short=["ev"]),
    _t(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        short=["hpa"],
        sub=["status"],
    ),
    _t("apiregistration.k8s.io", "v1", "apiservices", "APIService", False, sub=["status"]),
    _t("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    _t(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
    ),
    # Dynamic Resource Allocation (resource.k8s.io/v1, GA in Kubernetes 1.34)
    _t("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    _t(
        "resource.k8s.io",
        "v1",
        "resourceslices",
        "ResourceSlice",
        False,
        fields=["spec.nodeName", "spec.driver"],
    ),
    _t("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", sub=["status"]),
    _t("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate"),
)


def builtin_types() -> list[ResourceType]:
    return list(BUILTIN_TYPES)


def types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a ``CustomResourceDefinition`` serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    out: list[ResourceType] = []
    for ver in spec.get("versions") or []:
        if not ver.get("served", True):
            continue
        subs = ver.get("subresources") or {}
        sub_names = tuple(s for s in ("status", "scale") if s in subs)
        out.append(
            ResourceType(
                group=group,
                version=ver["name"],
                plural=names.get("plural", ""),
                kind=names.get("kind", ""),
                namespaced=namespaced,
                singular=names.get("singular", "") or names.get("kind", "").lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=sub_names,
                custom=True,
                return_deleted_object=True,
                extra={"storage": bool(ver.get("storage"))},
            )
        )
    return out
