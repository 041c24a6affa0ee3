"""``check-nvidia-smi``, the pure half: which nodes, which pods, what their logs mean.

:func:`discover_gpu_nodes` and :func:`plan_nvidia_smi` choose the GPU nodes to verify (cordoned
and busy nodes, ``--node-selector``, DRA-only nodes); :func:`build_verify_pod` /
:func:`build_verify_claim` are the verification pod (device plugin or DRA claim);
:func:`verify_node_output` and :func:`summarize_nvidia_smi` read the pods' logs into the verdict.
The cluster I/O is :mod:`aicr_pytest.deployment.nvidia_smi`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aicr_pytest.core import ctrfextra
from aicr_pytest.core.allocmode import gpu_count
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.core.gofmt import go_list
from aicr_pytest.deployment import driver_floor
from aicr_pytest.deployment.common import CheckFailed, Emit

GPU_RESOURCE = "nvidia.com/gpu"
DRA_GPU_DRIVER = "gpu.nvidia.com"
DRA_POLICY = "dra-resource-claim"
DEFAULT_NVIDIA_SMI_IMAGE = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"
VERIFY_POD_PREFIX = "nvidia-smi-verify-"
VERIFY_CONTAINER = "nvidia-smi-verify-container"
SUCCESS_SENTINEL = "GPU_CHECK_SUCCESS"
QUERY_BEGIN = "AICR_GPU_QUERY_BEGIN"
QUERY_END = "AICR_GPU_QUERY_END"
VERIFY_SCRIPT = (
    "set -e\n"
    f"echo {QUERY_BEGIN}\n"
    "nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader\n"
    f"echo {QUERY_END}\n"
    "nvidia-smi\n"
    f"echo {SUCCESS_SENTINEL}\n"
)
CLAIM_NAME_IN_POD = "gpu"

MSG_NODES_QUERY_FAILED = "[INTERNAL] failed to query for GPU nodes: {err}"
MSG_NO_GPU_NODES = "no GPU nodes found in the cluster"
MSG_ONLY_CORDONED = "no schedulable GPU nodes found in the cluster (cordoned: {nodes})"
MSG_SELECTOR_MATCHES_NONE = "[INVALID_REQUEST] --node-selector {selector} matches zero of {total} GPU nodes"
MSG_NODES_BUSY = "GPU nodes busy with existing workloads: {nodes}"
LINE_FOUND_NODES = "Found {count} GPU node(s):"
LINE_NODE = "  {node}"
LINE_NODE_CORDONED = "  {node}: cordoned (spec.unschedulable), not verified"
LINE_NODE_DRA_UNVERIFIED = (
    "  {node}: DRA-only GPU node (no nvidia.com/gpu allocatable), verified only under the "
    "dra-resource-claim policy"
)
LINE_NODES_AVAILABLE = "All {count} GPU node(s) available. Verifying..."
LINE_NODE_OK = "  {node}: OK ({gpus} GPU(s), driver {driver})"
LINE_NODE_FAILED = "  {node}: FAILED ({err})"
LINE_NODES_VALIDATED = "nodesValidated: {ok}/{total}"
MSG_CREATE_FAILED = "[INTERNAL] failed to create verification pod: {err}"
MSG_POD_FAILED = "[INTERNAL] pod failed on node {node}\n{debug}\nFirst 20 lines:\n{logs}: {cause}"
MSG_NO_DEBUG = "no additional debug info available"
MSG_LOG_VERIFICATION = "[INTERNAL] log verification failed for pod {ns}/{pod}: missing {missing}"
MSG_TOO_FEW_GPUS = (
    "[INTERNAL] nvidia-smi on node {node} shows {seen} GPU(s), but the node advertises {expected} ({source})"
)
MSG_VERIFY_FAILED = "[INTERNAL] GPU verification failed on {failed}/{total} nodes: {details}"
MSG_VERIFIED = "Successfully verified GPU on all {count} nodes"
MSG_VERIFIED_CORDONED = "; {count} cordoned GPU node(s) not verified: {nodes}"
# Either spelling: newer drivers print "KMD Version:" / "CUDA UMD Version:" (#1667).
LOG_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("NVIDIA-SMI", ("nvidia-smi",)),
    ("Driver Version:", ("driver version:", "kmd version:")),
    ("CUDA Version:", ("cuda version:", "cuda umd version:")),
    (SUCCESS_SENTINEL, (SUCCESS_SENTINEL.lower(),)),
)


@dataclass(frozen=True)
class GpuNode:
    """A node to verify: ``gpus`` = allocatable ``nvidia.com/gpu`` or DRA GPU devices."""

    name: str
    gpus: int
    mode: Literal["device-plugin", "dra"] = "device-plugin"
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuNodeInventory:
    nodes: tuple[GpuNode, ...]
    cordoned: tuple[str, ...] = ()
    dra_unverified: tuple[str, ...] = ()
    total_gpu_nodes: int = 0


def dra_gpu_devices(resource_slices: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """GPU devices per node from ``gpu.nvidia.com`` ResourceSlices (newest pool generation only;
    devices typed ``type: gpu`` when the driver types them, else every device)."""
    newest: dict[tuple[str, str], int] = {}
    slices = [s for s in resource_slices if (s.get("spec") or {}).get("driver") == DRA_GPU_DRIVER]
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (str(spec.get("nodeName") or ""), str(pool.get("name") or ""))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation") or 0))
    counts: dict[str, int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        pool = spec.get("pool") or {}
        if not node or int(pool.get("generation") or 0) != newest[(node, str(pool.get("name") or ""))]:
            continue
        for device in spec.get("devices") or []:
            attrs = (
                (device or {}).get("attributes") or (device or {}).get("basic", {}).get("attributes") or {}
            )
            dtype = (
                (attrs.get("type") or {}).get("string") if isinstance(attrs.get("type"), Mapping) else None
            )
            if dtype is None or dtype == "gpu":
                counts[node] = counts.get(node, 0) + 1
    return counts


def _matches_selector(labels: Mapping[str, str], selector: Mapping[str, str] | None) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def discover_gpu_nodes(
    nodes: Sequence[Mapping[str, Any]],
    resource_slices: Sequence[Mapping[str, Any]] = (),
    *,
    policy: str = "device-plugin-extended-resource",
    node_selector: Mapping[str, str] | None = None,
) -> GpuNodeInventory:
    """GPU nodes to verify.

    A node is a GPU node when it has ``nvidia.com/gpu`` allocatable (device-plugin mode) or
    ``gpu.nvidia.com`` ResourceSlice devices (DRA-only).  ``--node-selector`` narrows the set
    (zero matches raises :class:`CheckFailed`).  Cordoned GPU nodes are returned in
    ``cordoned`` (reported, not verified); DRA-only nodes are verified only under the
    ``dra-resource-claim`` policy, else returned in ``dra_unverified``.
    """
    dra = dra_gpu_devices(resource_slices)
    gpu_nodes: list[tuple[Mapping[str, Any], GpuNode]] = []
    for node in nodes:
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        allocatable = gpu_count((node.get("status") or {}).get("allocatable"))
        if allocatable > 0:
            gpu_nodes.append((node, GpuNode(name, allocatable, "device-plugin", labels)))
        elif dra.get(name, 0) > 0:
            gpu_nodes.append((node, GpuNode(name, dra[name], "dra", labels)))
    total = len(gpu_nodes)
    if node_selector:
        selected = [(n, g) for n, g in gpu_nodes if _matches_selector(g.labels, node_selector)]
        if gpu_nodes and not selected:
            text = ",".join(f"{k}={v}" for k, v in node_selector.items())
            raise CheckFailed(MSG_SELECTOR_MATCHES_NONE.format(selector=text, total=total))
        gpu_nodes = selected
    verify: list[GpuNode] = []
    cordoned: list[str] = []
    dra_unverified: list[str] = []
    for node, gpu in gpu_nodes:
        if (node.get("spec") or {}).get("unschedulable") is True:
            cordoned.append(gpu.name)
        elif gpu.mode == "dra" and policy != DRA_POLICY:
            dra_unverified.append(gpu.name)
        else:
            verify.append(gpu)
    return GpuNodeInventory(
        nodes=tuple(sorted(verify, key=lambda g: g.name)),
        cordoned=tuple(sorted(cordoned)),
        dra_unverified=tuple(sorted(dra_unverified)),
        total_gpu_nodes=total,
    )


def _claim_names(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    by_pod_name: dict[str, str] = {}
    for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if st.get("resourceClaimName"):
            by_pod_name[str(st.get("name"))] = str(st["resourceClaimName"])
    names = []
    for rc in spec.get("resourceClaims") or []:
        claim = rc.get("resourceClaimName") or by_pod_name.get(str(rc.get("name")))
        names.append(str(claim) if claim else f"<unresolved {rc.get('name')}>")
    return names


def _claim_uses_gpu(claim: Mapping[str, Any]) -> bool:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    if results:
        return any(r.get("driver") == DRA_GPU_DRIVER for r in results)
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        exactly = req.get("exactly") or req
        if exactly.get("deviceClassName") == DRA_GPU_DRIVER:
            return True
    return False


def _gpu_quantity(container: Mapping[str, Any]) -> int:
    res = container.get("resources") or {}
    return max(gpu_count(res.get("limits")), gpu_count(res.get("requests")))


def gpu_busy_reasons(
    node: str,
    pods: Sequence[Mapping[str, Any]] | None,
    resource_claims: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Why ``node``'s GPUs are in use (empty = free).

    Counts every non-terminal pod on the node with ``nvidia.com/gpu`` on any container,
    init container included, and pods holding a ResourceClaim for ``gpu.nvidia.com`` devices
    (an unresolvable claim counts as busy).  ``pods=None`` (the list failed) is busy.
    """
    if pods is None:
        return ["could not list pods on the node"]
    claims = {
        ((c.get("metadata") or {}).get("namespace"), (c.get("metadata") or {}).get("name")): c
        for c in resource_claims
    }
    reasons: list[str] = []
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") not in (None, node):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        meta = pod.get("metadata") or {}
        ref = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
        if any(_gpu_quantity(c) > 0 for c in containers):
            reasons.append(f"{ref} requests {GPU_RESOURCE}")
            continue
        for claim_name in _claim_names(pod):
            claim = claims.get((meta.get("namespace"), claim_name))
            if claim is None or _claim_uses_gpu(claim):
                reasons.append(f"{ref} holds ResourceClaim {claim_name}")
                break
    return reasons


def plan_nvidia_smi(
    inventory: GpuNodeInventory,
    pods_by_node: Mapping[str, Sequence[Mapping[str, Any]] | None],
    resource_claims: Sequence[Mapping[str, Any]] = (),
    *,
    emit: Emit,
) -> list[GpuNode]:
    """Report the node set, run the busy test, and return the nodes to verify.

    Raises :class:`CheckSkip` when there is nothing to verify or any node is busy.
    """
    if not inventory.nodes:
        for node in inventory.cordoned:
            emit(LINE_NODE_CORDONED.format(node=node))
        for node in inventory.dra_unverified:
            emit(LINE_NODE_DRA_UNVERIFIED.format(node=node))
        if inventory.cordoned:
            raise CheckSkip(
                MSG_ONLY_CORDONED.format(nodes=go_list(inventory.cordoned)), _unverifiable_code(inventory)
            )
        raise CheckSkip(MSG_NO_GPU_NODES, _unverifiable_code(inventory))
    emit(LINE_FOUND_NODES.format(count=len(inventory.nodes)))
    for gpu in inventory.nodes:
        emit(LINE_NODE.format(node=gpu.name))
    for node in inventory.cordoned:
        emit(LINE_NODE_CORDONED.format(node=node))
    for node in inventory.dra_unverified:
        emit(LINE_NODE_DRA_UNVERIFIED.format(node=node))
    busy = [
        g.name for g in inventory.nodes if gpu_busy_reasons(g.name, pods_by_node.get(g.name), resource_claims)
    ]
    if busy:
        # AICR's nodes-busy code says occupancy was seen: not when every "busy" node is a failed pod list
        confirmed = any(pods_by_node.get(name) is not None for name in busy)
        code = ctrfextra.SKIP_NODES_BUSY if confirmed else None
        raise CheckSkip(MSG_NODES_BUSY.format(nodes=go_list(busy)), code)
    emit(LINE_NODES_AVAILABLE.format(count=len(inventory.nodes)))
    return list(inventory.nodes)


def _unverifiable_code(inventory: GpuNodeInventory) -> str | None:
    """AICR's ``skipReason`` when no node can be verified: ``no-gpu-nodes`` (there are none) or
    ``no-schedulable-gpu-nodes`` (all cordoned); DRA-only nodes left unverified fit neither."""
    if inventory.dra_unverified:
        return None
    return ctrfextra.SKIP_NO_SCHEDULABLE_GPU_NODES if inventory.cordoned else ctrfextra.SKIP_NO_GPU_NODES


_DNS_INVALID = re.compile(r"[^a-z0-9-]+")


def verify_pod_name(node: str, run_id: str) -> str:
    """``nvidia-smi-verify-<node>-<run_id>``, DNS-1123, at most 63 characters (long node names
    are cut and disambiguated with a hash)."""
    suffix = _DNS_INVALID.sub("-", node.lower().replace(".", "-")).strip("-")
    run = _DNS_INVALID.sub("-", run_id.lower()).strip("-")
    name = f"{VERIFY_POD_PREFIX}{suffix}-{run}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(node.encode()).hexdigest()[:8]
    room = 63 - len(VERIFY_POD_PREFIX) - len(run) - len(digest) - 2
    return f"{VERIFY_POD_PREFIX}{suffix[: max(room, 1)].rstrip('-')}-{digest}-{run}"[:63].rstrip("-")


def _toleration_dicts(tolerations: Sequence[Mapping[str, Any] | Any] | None) -> list[dict[str, Any]]:
    if tolerations is None:
        return [{"operator": "Exists"}]
    out: list[dict[str, Any]] = []
    for t in tolerations:
        to_k8s = getattr(t, "to_k8s", None)
        out.append(dict(to_k8s()) if callable(to_k8s) else dict(t))
    return out


def build_verify_pod(
    node: GpuNode,
    *,
    name: str,
    namespace: str,
    image: str = DEFAULT_NVIDIA_SMI_IMAGE,
    labels: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any] | Any] | None = None,
    node_selector: Mapping[str, str] | None = None,
    claim_name: str | None = None,
    active_deadline_seconds: int = 600,
) -> dict[str, Any]:
    """The verification Pod for one node.

    Device-plugin nodes: pinned with ``nodeName``, requesting every allocatable GPU so
    nvidia-smi can show them all.  DRA nodes (``node.mode == "dra"``, ``claim_name`` required):
    the scheduler must allocate the claim, so the pod is pinned with a ``kubernetes.io/hostname``
    node selector instead.  ``tolerations=None`` tolerates everything (``--toleration`` replaces
    it); ``node_selector`` (``--node-selector``) is added to the pod's selector.
    """
    container: dict[str, Any] = {
        "name": VERIFY_CONTAINER,
        "image": image,
        "command": ["/bin/sh", "-c"],
        "args": [VERIFY_SCRIPT],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
    }
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "activeDeadlineSeconds": active_deadline_seconds,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "tolerations": _toleration_dicts(tolerations),
    }
    selector = dict(node_selector or {})
    if node.mode == "dra":
        if not claim_name:
            raise ValueError("a DRA verification pod needs claim_name")
        container["resources"] = {"claims": [{"name": CLAIM_NAME_IN_POD}]}
        spec["resourceClaims"] = [{"name": CLAIM_NAME_IN_POD, "resourceClaimName": claim_name}]
        selector["kubernetes.io/hostname"] = node.name
    else:
        count = str(node.gpus)
        container["resources"] = {"limits": {GPU_RESOURCE: count}, "requests": {GPU_RESOURCE: count}}
        spec["nodeName"] = node.name
    if selector:
        spec["nodeSelector"] = selector
    all_labels = {
        "app.kubernetes.io/name": "nvidia-smi-verify",
        "app.kubernetes.io/managed-by": "aicr-pytest",
        "source": "e2e-tests",
        **dict(labels or {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": all_labels,
            "annotations": {"aicr.run/node": node.name},
        },
        "spec": spec,
    }


def build_verify_claim(
    node: GpuNode,
    *,
    name: str,
    namespace: str,
    api_version: str = "resource.k8s.io/v1",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim for all of a DRA node's GPUs (``ExactCount``; ``v1beta1`` puts the
    request fields inline, ``v1``/``v1beta2`` under ``exactly``)."""
    request: dict[str, Any] = {
        "deviceClassName": DRA_GPU_DRIVER,
        "allocationMode": "ExactCount",
        "count": node.gpus,
    }
    if api_version.endswith("/v1beta1"):
        req = {"name": CLAIM_NAME_IN_POD, **request}
    else:
        req = {"name": CLAIM_NAME_IN_POD, "exactly": request}
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "aicr-pytest", **dict(labels or {})},
        },
        "spec": {"devices": {"requests": [req]}},
    }


@dataclass(frozen=True)
class NvidiaSmiReport:
    gpus: tuple[tuple[str, str, str], ...]  # (index, name, driver_version)

    @property
    def count(self) -> int:
        return len(self.gpus)

    @property
    def driver_versions(self) -> tuple[str, ...]:
        return tuple(sorted({g[2] for g in self.gpus}))


def parse_nvidia_smi_output(logs: str) -> tuple[NvidiaSmiReport, list[str]]:
    """Parse the verify container's output: the CSV block between the query markers, and the
    list of missing required markers (empty = complete)."""
    lower = logs.lower()
    missing = [label for label, spellings in LOG_MARKERS if not any(s in lower for s in spellings)]
    rows: list[tuple[str, str, str]] = []
    begin = logs.find(QUERY_BEGIN)
    end = logs.find(QUERY_END, begin + 1) if begin >= 0 else -1
    if begin < 0 or end < 0:
        missing.append("GPU query block")
    else:
        for line in logs[begin + len(QUERY_BEGIN) : end].splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 3 and parts[0]:
                rows.append((parts[0], ", ".join(parts[1:-1]), parts[-1]))
    return NvidiaSmiReport(tuple(rows)), missing


@dataclass(frozen=True)
class NodeResult:
    node: str
    ok: bool
    error: str | None = None
    gpus: int | None = None
    driver_version: str | None = None
    inconclusive: bool = False  # pod vanished / wait timed out: CTRF "other" if nothing else failed
    floor_line: str | None = None  # the host-driver floor's evidence line (driver_floor)


def verify_node_output(
    node: GpuNode, *, namespace: str, pod_name: str, logs: str, floor: str | None = None
) -> NodeResult:
    """Verdict for one node from its pod's logs: markers present, at least as many GPUs as the
    node advertises and, when the recipe declares one, the host driver at or above ``floor``
    (:mod:`aicr_pytest.deployment.driver_floor`)."""
    report, missing = parse_nvidia_smi_output(logs)
    if missing:
        return NodeResult(
            node.name,
            False,
            MSG_LOG_VERIFICATION.format(ns=namespace, pod=pod_name, missing=go_list(missing)),
        )
    driver = ",".join(report.driver_versions)
    if report.count < node.gpus:
        source = (
            f"allocatable {GPU_RESOURCE}"
            if node.mode == "device-plugin"
            else f"{DRA_GPU_DRIVER} ResourceSlice devices"
        )
        return NodeResult(
            node.name,
            False,
            MSG_TOO_FEW_GPUS.format(node=node.name, seen=report.count, expected=node.gpus, source=source),
            gpus=report.count,
            driver_version=driver,
        )
    if floor is not None:
        verdict = driver_floor.enforce_floor(floor, logs, node.name)
        if verdict.error is not None:
            version = verdict.version or driver
            return NodeResult(node.name, False, verdict.error, report.count, version, floor_line=verdict.line)
        return NodeResult(node.name, True, gpus=report.count, driver_version=driver, floor_line=verdict.line)
    return NodeResult(node.name, True, gpus=report.count, driver_version=driver)


def format_pod_failure(
    node: str,
    pod: Mapping[str, Any] | None,
    events: Sequence[Mapping[str, Any]],
    logs: str,
    cause: str,
) -> str:
    """``[INTERNAL] pod failed on node <n>\\n<debug>\\nFirst 20 lines:\\n<logs>: <cause>``."""
    debug: list[str] = []
    status = (pod or {}).get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            state = cs.get("state") or {}
            name = cs.get("name", "?")
            if state.get("waiting"):
                w = state["waiting"]
                debug.append(f"Container {name}: waiting ({w.get('reason', '')}: {w.get('message', '')})")
            elif state.get("terminated"):
                t = state["terminated"]
                debug.append(
                    f"Container {name}: terminated (reason={t.get('reason', '')} "
                    f"exitCode={t.get('exitCode', '')} message={t.get('message', '')})"
                )
    for ev in events:
        if ev.get("type", "Warning") == "Warning":
            debug.append(f"Event: {ev.get('reason', '')} — {ev.get('message', '')}")
    first = "\n".join(logs.splitlines()[:20])
    return MSG_POD_FAILED.format(node=node, debug="\n".join(debug) or MSG_NO_DEBUG, logs=first, cause=cause)


def summarize_nvidia_smi(
    results: Sequence[NodeResult],
    *,
    emit: Emit,
    cordoned: Sequence[str] = (),
) -> str:
    """Emit per-node lines and decide.  Raises :class:`CheckFailed` when any node failed,
    :class:`Inconclusive` when the only problems were inconclusive (pod vanished, timeout)."""
    ordered = sorted(results, key=lambda r: r.node)
    for r in ordered:
        if r.floor_line:
            emit(r.floor_line)
        if r.ok:
            emit(LINE_NODE_OK.format(node=r.node, gpus=r.gpus, driver=r.driver_version or "unknown"))
        else:
            emit(LINE_NODE_FAILED.format(node=r.node, err=r.error))
    bad = [r for r in ordered if not r.ok]
    emit(LINE_NODES_VALIDATED.format(ok=len(ordered) - len(bad), total=len(ordered) + len(cordoned)))
    if bad:
        details = go_list(f"{r.node} ({r.error})" for r in bad)
        message = MSG_VERIFY_FAILED.format(failed=len(bad), total=len(ordered), details=details)
        if all(r.inconclusive for r in bad):
            raise Inconclusive(message)
        raise CheckFailed(message)
    message = MSG_VERIFIED.format(count=len(ordered))
    emit(message)
    if cordoned:
        message += MSG_VERIFIED_CORDONED.format(count=len(cordoned), nodes=go_list(cordoned))
    return message
