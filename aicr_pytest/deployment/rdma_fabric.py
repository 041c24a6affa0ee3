"""``expected-resources``' RDMA fabric readiness gate, derived from the recipe's NicClusterPolicy.

Upstream AICR main (``validators/deployment/rdma_fabric_resource.go`` and the RDMA part of
``expected_resources.go``, repository NVIDIA/aicr): when the enabled ``network-operator`` component
lists a manifest whose path contains ``nic-cluster-policy``, the recipe stands up an RDMA fabric, and
the deployment phase waits until every schedulable Mellanox RDMA-capable GPU node (label
``feature.node.kubernetes.io/pci-15b3.present=true``, the policy's own nodeAffinity) advertises the
fabric's extended resource in a uniform, positive count, held for the stability window.

The resource is not a per-provider constant: it is read from the policy's device-plugin configs
(``spec.rdmaSharedDevicePlugin.config`` ``configList[].resourcePrefix/resourceName``, default prefix
``rdma``: ``rdma/hca_shared_devices_a`` on AKS; ``spec.sriovDevicePlugin.config``
``resourceList[]``, default prefix ``intel.com``). Fail closed throughout: an unreadable or
unparsable manifest, a policy that declares no resource or several distinct ones, and a cluster with
no schedulable RDMA GPU node are failures, never a skipped gate.

Upstream renders the manifest with the component's effective Helm values first; we do not run Helm:
template actions (``{{ … }}``) are blanked before parsing, and a device-plugin config that itself
contains one fails closed (the resource would depend on values we did not render).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import yaml

from aicr_pytest.core.allocmode import gpu_count
from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.core.gofmt import format_names
from aicr_pytest.deployment.common import _describe_error
from aicr_pytest.deployment.healthcheck import Fetch

#: one sample of the gate: the problem (``None`` = healthy) and, when healthy, the evidence lines
Verdict = tuple[str | None, tuple[str, ...]]

COMPONENT = "network-operator"
MANIFEST_MARKER = "nic-cluster-policy"
MELLANOX_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
RDMA_SHARED_DEFAULT_PREFIX = "rdma"
SRIOV_DEFAULT_PREFIX = "intel.com"
GPU_RESOURCE = "nvidia.com/gpu"
TEMPLATED = "__aicr_templated__"

MSG_LOAD_FAILED = (
    "[INTERNAL] failed to load NicClusterPolicy manifest {path} for component {component}: {err}"
)
MSG_PARSE_FAILED = (
    "[INTERNAL] failed to parse NicClusterPolicy manifest {path} for component {component}: {err}"
)
MSG_NO_RESOURCE = (
    "[INTERNAL] component {component} declares a NicClusterPolicy manifest but no device-plugin resource "
    "could be derived from it; the RDMA fabric readiness gate cannot run"
)
MSG_MANY_RESOURCES = (
    "[INTERNAL] component {component} declares multiple distinct RDMA fabric resources {names}; the "
    "readiness gate polls a single uniform resource and cannot arbitrate"
)
CAUSE_BAD_CONFIG = "failed to decode {block} config JSON: {err}"
CAUSE_TEMPLATED_CONFIG = "{block} config is templated (it needs the component's Helm values)"
LABEL = "RDMA shared-device fabric ({resource}) across RDMA GPU nodes"
MSG_LIST_FAILED = "failed to list nodes for the RDMA fabric readiness gate: {err}"
MSG_NO_COHORT = (
    "RDMA fabric gate: no schedulable Mellanox RDMA-capable GPU nodes observed yet "
    "(label feature.node.kubernetes.io/pci-15b3.present=true)"
)
MSG_NOT_READY = (
    "{resource} not yet allocatable on {missing} of {total} RDMA GPU node(s): {nodes} "
    "(network operator MOFED / RDMA device plugin still rolling out)"
)
MSG_SKEW = (
    "{resource} allocatable count is non-uniform across {total} RDMA GPU node(s) "
    "(want all == {want}): {nodes}"
)
LINE_FOUND = (
    "Found {total} Mellanox RDMA-capable GPU node(s), {schedulable} schedulable, {cordoned} cordoned:"
)
LINE_CORDONED = "  {node}: skipped (cordoned)"
LINE_COVERAGE = "nodesValidated: {validated}/{total}"
LINE_COVERAGE_CORDONED = "nodesValidated: {validated}/{total} ({cordoned} cordoned, skipped)"
LINE_READY = (
    "  RDMA fabric ({resource}): allocatable (uniform) on all {count} schedulable RDMA GPU node(s) "
    "(stable ≥{dwell})"
)

_DOC_SPLIT = re.compile(r"^---\s*$", re.MULTILINE)
_ACTION_LINE = re.compile(r"^\s*\{\{-?.*?-?\}\}\s*$", re.MULTILINE)
_ACTION = re.compile(r"\{\{-?.*?-?\}\}")


class FabricDerivationError(Exception):
    """The fabric resource could not be derived (``str()`` is the failure line)."""


def declares_rdma_fabric(ref: Mapping[str, Any]) -> bool:
    """Does this component ref stand up an RDMA fabric (a NicClusterPolicy manifest)?"""
    return str(ref.get("name") or "") == COMPONENT and any(
        MANIFEST_MARKER in str(f) for f in ref.get("manifestFiles") or []
    )


def _blank_templates(text: str) -> str:
    return _ACTION.sub(TEMPLATED, _ACTION_LINE.sub("", text))


def _qualified(entry: Mapping[str, Any], default_prefix: str) -> str:
    prefix = str(entry.get("resourcePrefix") or "") or default_prefix
    return f"{prefix}/{entry.get('resourceName') or ''}"


def _config_resources(spec: Mapping[str, Any], block: str, key: str, prefix: str) -> list[str]:
    plugin = spec.get(block)
    if not isinstance(plugin, Mapping):
        return []
    config = str(plugin.get("config") or "")
    if TEMPLATED in config:
        raise ValueError(CAUSE_TEMPLATED_CONFIG.format(block=block))
    try:
        parsed = json.loads(config)
    except json.JSONDecodeError as err:
        raise ValueError(CAUSE_BAD_CONFIG.format(block=block, err=err)) from err
    entries = parsed.get(key) if isinstance(parsed, Mapping) else None
    return [_qualified(e, prefix) for e in entries or [] if isinstance(e, Mapping)]


def policy_resources(manifest: str) -> list[str]:
    """Every ``<prefix>/<name>`` the NicClusterPolicy documents in ``manifest`` declare; raises
    :class:`ValueError` on a document that does not parse (a malformed policy is no "no fabric")."""
    out: list[str] = []
    for doc_text in _DOC_SPLIT.split(_blank_templates(manifest)):
        if not doc_text.strip():
            continue
        try:
            doc = yaml.safe_load(doc_text)
        except yaml.YAMLError as err:
            raise ValueError(f"failed to decode manifest document: {' '.join(str(err).split())}") from err
        if not isinstance(doc, Mapping) or doc.get("kind") != "NicClusterPolicy":
            continue
        raw_spec = doc.get("spec")
        spec: Mapping[str, Any] = raw_spec if isinstance(raw_spec, Mapping) else {}
        out += _config_resources(spec, "rdmaSharedDevicePlugin", "configList", RDMA_SHARED_DEFAULT_PREFIX)
        out += _config_resources(spec, "sriovDevicePlugin", "resourceList", SRIOV_DEFAULT_PREFIX)
    return out


def fabric_resource(ref: Mapping[str, Any], read_data_file: Callable[[str], str]) -> str:
    """The one extended resource the ref's NicClusterPolicy manifests advertise, or
    :class:`FabricDerivationError`."""
    component = str(ref.get("name") or "")
    found: set[str] = set()
    for path in (str(f) for f in ref.get("manifestFiles") or []):
        if MANIFEST_MARKER not in path:
            continue
        try:
            text = read_data_file(path)
        except Exception as err:
            raise FabricDerivationError(
                MSG_LOAD_FAILED.format(path=path, component=component, err=_describe_error(err))
            ) from err
        try:
            found.update(policy_resources(text))
        except ValueError as err:
            raise FabricDerivationError(
                MSG_PARSE_FAILED.format(path=path, component=component, err=err)
            ) from err
    if not found:
        raise FabricDerivationError(MSG_NO_RESOURCE.format(component=component))
    if len(found) > 1:
        raise FabricDerivationError(
            MSG_MANY_RESOURCES.format(component=component, names="[" + " ".join(sorted(found)) + "]")
        )
    return found.pop()


def _is_gpu_node(node: Mapping[str, Any]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return gpu_count(allocatable) > 0 or labels.get("nvidia.com/gpu.present") == "true"


def fabric_verdict(nodes: Iterable[Mapping[str, Any]], resource: str, dwell: float) -> Verdict:
    """One pass of the gate over the cluster's nodes."""
    cohort: list[tuple[str, int]] = []
    cordoned: list[str] = []
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name") or "")):
        meta = node.get("metadata") or {}
        if (meta.get("labels") or {}).get(MELLANOX_LABEL) != "true" or not _is_gpu_node(node):
            continue
        name = str(meta.get("name") or "")
        if (node.get("spec") or {}).get("unschedulable"):
            cordoned.append(name)
            continue
        cohort.append((name, gpu_count((node.get("status") or {}).get("allocatable"), resource)))
    if not cohort:
        return MSG_NO_COHORT, ()
    missing = [n for n, count in cohort if count <= 0]
    if missing:
        nodes_text = format_names(missing)
        return MSG_NOT_READY.format(
            resource=resource, missing=len(missing), total=len(cohort), nodes=nodes_text
        ), ()
    want = cohort[0][1]
    skew = [f"{n}={count}" for n, count in cohort if count != want]
    if skew:
        return MSG_SKEW.format(resource=resource, total=len(cohort), want=want, nodes=format_names(skew)), ()
    total = len(cohort) + len(cordoned)
    coverage = (
        LINE_COVERAGE_CORDONED.format(validated=len(cohort), total=total, cordoned=len(cordoned))
        if cordoned
        else LINE_COVERAGE.format(validated=len(cohort), total=total)
    )
    lines = [
        LINE_FOUND.format(total=total, schedulable=len(cohort), cordoned=len(cordoned)),
        *(LINE_CORDONED.format(node=n) for n in cordoned),
        coverage,
        LINE_READY.format(resource=resource, count=len(cohort), dwell=format_go_duration(dwell)),
    ]
    return None, tuple(lines)


def sample(fetch: Fetch, resource: str, dwell: float) -> Verdict:
    """Read the nodes and judge them (a failed list is an unhealthy sample, never "ready")."""
    try:
        nodes: Sequence[Mapping[str, Any]] = fetch("v1", "Node", None, None, None)
    except Exception as err:
        return MSG_LIST_FAILED.format(err=_describe_error(err)), ()
    return fabric_verdict(nodes, resource, dwell)


__all__ = [
    "COMPONENT",
    "LABEL",
    "MELLANOX_LABEL",
    "FabricDerivationError",
    "declares_rdma_fabric",
    "fabric_resource",
    "fabric_verdict",
    "policy_resources",
    "sample",
]
