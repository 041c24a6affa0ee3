"""``K8s.*`` and ``NodeTopology.*`` from API objects (pure; the reads are in :mod:`.cluster`).

Rules of AICR's collectors (``pkg/collector/k8s``, ``pkg/collector/topology``):

* ``K8s.server`` -- ``/version``: ``version`` (``gitVersion``), ``platform``, ``goVersion``;
* ``K8s.image`` -- every container, init and ephemeral container image of every pod: the part
  after the last ``/`` (registry and repository path dropped), a ``@digest`` dropped, then
  ``name`` -> ``tag`` split at the last ``:`` (``latest`` when there is none);
* ``K8s.policy`` -- the ``spec`` of every ``ClusterPolicy`` flattened to dotted keys, every value
  a string: booleans ``true``/``false``, numbers as Go prints them, non-empty lists as compact JSON
  (keys sorted, ``<``/``>``/``&`` escaped, as Go's ``encoding/json`` writes them); empty lists, empty
  maps and nulls give no key;
* ``K8s.node`` -- of the node the agent ran on: ``source-node``, ``provider`` (from the
  ``providerID`` scheme: ``aws`` -> ``eks``, ``gce`` -> ``gke``, ``azure`` -> ``aks``, ``oci`` or an
  ``ocid1.`` id -> ``oke``, ``linode`` -> ``lke``), ``provider-id``, ``container-runtime-id/-name/
  -version``, ``kubelet-version``, ``kernel-version``, ``operating-system``, ``os-image``;
* ``NodeTopology.summary`` -- ``node-count``, ``taint-count``, ``label-count`` (entries written);
* ``NodeTopology.taint`` -- ``<key>`` -> ``effect|value|node1,node2``; a key with several effects
  is written ``<key>.<effect>`` -> ``value|nodes``;
* ``NodeTopology.label`` -- ``<key>`` -> ``value|nodes``; a key with several values is written
  ``<key>.<value>`` -> ``value|nodes``.

Node lists are sorted; with ``max_nodes_per_entry`` > 0 a longer list keeps that many names and
ends with `` (+N more)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from aicr_pytest.core.gofmt import format_go_float, go_json
from aicr_pytest.snapshot.measure import Data

JSON = dict[str, Any]

PROVIDERS: Final[Mapping[str, str]] = {
    "aws": "eks",
    "gce": "gke",
    "azure": "aks",
    "oci": "oke",
    "linode": "lke",
}
CLUSTER_POLICY_KIND: Final = "ClusterPolicy"


# -- K8s.server --------------------------------------------------------------------------------
def server_data(version: Mapping[str, Any]) -> Data:
    """``K8s.server`` from the ``/version`` body (empty fields are left out)."""
    data: Data = {}
    for key, field in (("version", "gitVersion"), ("platform", "platform"), ("goVersion", "goVersion")):
        value = version.get(field)
        if isinstance(value, str) and value:
            data[key] = value
    return data


# -- K8s.image ---------------------------------------------------------------------------------
def split_image(ref: str) -> tuple[str, str]:
    """``nvcr.io/nvidia/gpu-operator:v25.10.1`` -> ``("gpu-operator", "v25.10.1")``."""
    tail = ref.rsplit("/", 1)[-1]
    tail = tail.split("@", 1)[0]
    name, sep, tag = tail.rpartition(":")
    if not sep:
        return tail, "latest"
    return name, tag


def pod_images(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    refs: list[str] = []
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            image = (container or {}).get("image")
            if isinstance(image, str) and image:
                refs.append(image)
    return refs


def image_data(pods: Iterable[Mapping[str, Any]]) -> Data:
    """``K8s.image``: image name -> tag over every pod (a later pod's tag wins, as in AICR)."""
    images: dict[str, str] = {}
    for pod in pods:
        for ref in pod_images(pod):
            name, tag = split_image(ref)
            if name:
                images[name] = tag
    return dict(images)


# -- K8s.policy --------------------------------------------------------------------------------
def _policy_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return go_json(value) if value else None
    return None  # null


def flatten_spec(
    spec: Mapping[str, Any], prefix: str = "", out: dict[str, str] | None = None
) -> dict[str, str]:
    """``{"driver": {"version": "580.95.05"}}`` -> ``{"driver.version": "580.95.05"}`` (module docstring)."""
    result: dict[str, str] = {} if out is None else out
    for key, value in spec.items():
        full = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            flatten_spec(value, full, result)
            continue
        text = _policy_value(value)
        if text is not None:
            result[full] = text
    return result


def policy_data(policies: Iterable[Mapping[str, Any]]) -> Data:
    """``K8s.policy`` over ClusterPolicies in order (a later policy's key wins)."""
    merged: dict[str, str] = {}
    for policy in policies:
        spec = policy.get("spec")
        if isinstance(spec, Mapping):
            flatten_spec(spec, "", merged)
    return dict(merged)


def cluster_policy_resources(group_version: str, resources: Iterable[Mapping[str, Any]]) -> list[str]:
    """Plurals of ``ClusterPolicy`` kinds in one discovery ``APIResourceList`` (no subresources)."""
    del group_version
    return [
        str(r.get("name"))
        for r in resources
        if r.get("kind") == CLUSTER_POLICY_KIND and r.get("name") and "/" not in str(r.get("name"))
    ]


# -- K8s.node ----------------------------------------------------------------------------------
def provider_of(provider_id: str) -> str:
    """The ``provider`` a ``spec.providerID`` names (module docstring)."""
    if provider_id.startswith("ocid1."):
        return "oke"
    scheme = provider_id.split("://", 1)[0].strip().lower()
    return PROVIDERS.get(scheme, scheme)


def node_data(node: Mapping[str, Any]) -> Data:
    """``K8s.node`` for the node the agent ran on."""
    name = str((node.get("metadata") or {}).get("name") or "")
    data: Data = {"source-node": name}
    provider_id = str((node.get("spec") or {}).get("providerID") or "")
    if provider_id:
        data["provider"] = provider_of(provider_id)
        data["provider-id"] = provider_id
    info = (node.get("status") or {}).get("nodeInfo") or {}
    runtime = str(info.get("containerRuntimeVersion") or "")
    if runtime:
        data["container-runtime-id"] = runtime
        rt_name, sep, rt_version = runtime.partition("://")
        if sep:
            data["container-runtime-name"] = rt_name
            data["container-runtime-version"] = rt_version
    for key, field in (
        ("kubelet-version", "kubeletVersion"),
        ("kernel-version", "kernelVersion"),
        ("operating-system", "operatingSystem"),
        ("os-image", "osImage"),
    ):
        value = info.get(field)
        if isinstance(value, str) and value:
            data[key] = value
    return data


# -- NodeTopology ------------------------------------------------------------------------------
def format_nodes(nodes: list[str], max_nodes: int) -> str:
    """``a,b,c`` (sorted by the caller), or ``a,b (+1 more)`` beyond ``max_nodes`` (> 0)."""
    if max_nodes > 0 and len(nodes) > max_nodes:
        return ",".join(nodes[:max_nodes]) + f" (+{len(nodes) - max_nodes} more)"
    return ",".join(nodes)


class TopologyBuilder:
    """Accumulates taints and labels node by node (a paginated list never sits in memory whole)."""

    def __init__(self) -> None:
        self.node_count = 0
        self.taints: dict[tuple[str, str, str], list[str]] = {}
        self.labels: dict[tuple[str, str], list[str]] = {}

    def add(self, node: Mapping[str, Any]) -> None:
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        self.node_count += 1
        for taint in (node.get("spec") or {}).get("taints") or []:
            key = (str(taint.get("key") or ""), str(taint.get("effect") or ""), str(taint.get("value") or ""))
            self.taints.setdefault(key, []).append(name)
        for label, value in (meta.get("labels") or {}).items():
            self.labels.setdefault((str(label), str(value)), []).append(name)

    def taint_data(self, max_nodes: int) -> Data:
        effects: dict[str, int] = {}
        for key, _effect, _value in self.taints:
            effects[key] = effects.get(key, 0) + 1
        data: Data = {}
        for (key, effect, value), nodes in sorted(self.taints.items()):
            listed = format_nodes(sorted(nodes), max_nodes)
            if effects[key] > 1:
                data[f"{key}.{effect}"] = f"{value}|{listed}"
            else:
                data[key] = f"{effect}|{value}|{listed}"
        return data

    def label_data(self, max_nodes: int) -> Data:
        values: dict[str, int] = {}
        for key, _value in self.labels:
            values[key] = values.get(key, 0) + 1
        data: Data = {}
        for (key, value), nodes in sorted(self.labels.items()):
            name = f"{key}.{value}" if values[key] > 1 else key
            data[name] = f"{value}|{format_nodes(sorted(nodes), max_nodes)}"
        return data

    def subtypes(self, max_nodes: int) -> list[tuple[str, Data]]:
        """``summary``, ``taint``, ``label`` data."""
        taints = self.taint_data(max_nodes)
        labels = self.label_data(max_nodes)
        summary: Data = {
            "node-count": self.node_count,
            "taint-count": len(taints),
            "label-count": len(labels),
        }
        return [("summary", summary), ("taint", taints), ("label", labels)]


__all__ = [
    "CLUSTER_POLICY_KIND",
    "PROVIDERS",
    "TopologyBuilder",
    "cluster_policy_resources",
    "flatten_spec",
    "format_nodes",
    "image_data",
    "node_data",
    "pod_images",
    "policy_data",
    "provider_of",
    "server_data",
    "split_image",
]
