"""inference-perf GPU node choice (step 3 of a run): candidates, occupancy, the worker node.

After :mod:`aicr_pytest.core.allocmode` decided the allocation mode:
:func:`discover_candidate_nodes` → :func:`count_used_gpus_by_node` (pods + claims, fail closed)
→ :func:`select_worker_node` → print :func:`wiring_evidence`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.core.allocmode import (
    GPU_DRIVER,
    GPU_RESOURCE,
    POLICY_DEVICE_PLUGIN,
    POLICY_DRA_CLAIM,
    AllocationMode,
    UnsupportedGPUTopology,
    gpu_count,
    node_name,
    node_ready,
    node_scalar_gpus,
    node_unschedulable,
    normalize_policy,
)
from aicr_pytest.core.gofmt import go_map
from aicr_pytest.inference.knobs import InferenceFailure

MSG_NO_DRA_CANDIDATES: Final = (
    "no Ready, schedulable node with usable full-GPU DRA devices for the configured dra-resource-claim policy"
)
MSG_DRA_ONLY_CLUSTER: Final = (
    "no schedulable GPU node advertises scalar nvidia.com/gpu, but {n} node(s) carry usable full-GPU DRA "
    "devices ({names}) — a DRA-only cluster is not supported by AICR validation without a "
    "recipe-configured dra-resource-claim policy (experimental; see issue #1327)"
)
MSG_NO_GPU_NODES: Final = "no schedulable GPU nodes found"
MSG_SELECTOR_NO_MATCH: Final = "no schedulable GPU nodes match --node-selector {selector}"
MSG_POD_LIST_FAILED: Final = "failed to list pods for GPU occupancy accounting: {error}"
MSG_CLAIM_LIST_FAILED: Final = "failed to list DRA ResourceClaims for GPU occupancy accounting: {error}"
MSG_FOREIGN_CLAIM_CLASS: Final = (
    "unsupported GPU DRA configuration: allocated ResourceClaim {claim} requests DeviceClass "
    '"{device_class}" '
    "— only the NVIDIA gpu.nvidia.com DeviceClass is supported for full-GPU claims (issue #1327; "
    "generalized driver support is tracked in #1652)"
)
MSG_UNMAPPED_POOL: Final = (
    'unsupported GPU DRA configuration: allocated ResourceClaim {claim} holds device "{device}" from '
    'gpu.nvidia.com pool "{pool}", which no node-local ResourceSlice publishes — GPU occupancy cannot be '
    "attributed to a node (occupancy is attributed through the slices' spec.nodeName; issue #1327, #1652)"
)
MSG_NO_ELIGIBLE: Final = (
    "no eligible candidate GPU node ({n} matched; every candidate is NotReady, probe-ineligible, "
    "kai-blocked, or DRA-wired-but-scalar-occupied); free or repair a GPU node or pass --node-selector "
    "kubernetes.io/hostname=<node>"
)
MSG_NO_ELIGIBLE_DRA: Final = (
    'configured GPU allocation policy "dra-resource-claim": no eligible DRA-capable candidate node ({n} '
    "matched; every candidate is NotReady, not DRA-capable, or DRA-wired-but-scalar-occupied)"
)
MSG_OFFENDERS_KAI: Final = (
    "Node(s) {nodes} carry gpu.nvidia.com ResourceSlices that kai-scheduler counts but AICR cannot validate "
    "(incomplete or stale pool, tainted devices, or a missing gpu.nvidia.com DeviceClass), so kai-scheduler "
    "rejects scalar nvidia.com/gpu pods there and no DRA claim can be sized"
)
MSG_OFFENDERS_SCALAR: Final = (
    "DRA-capable node(s) {nodes} hold GPUs through device-plugin nvidia.com/gpu requests that the DRA "
    "allocator cannot see, so a DRA claim there could double-book a plugin-held GPU"
)
MSG_SATURATED: Final = (
    "no eligible candidate GPU node has free GPUs ({n} matched; eligible candidates are saturated by "
    "existing workloads in the selected mechanism's ledger — nodes excluded as NotReady, probe-ineligible, "
    "kai-blocked, or DRA-wired-but-scalar-occupied are not counted); free GPUs or pass --node-selector "
    "kubernetes.io/hostname=<empty-node>"
)
MSG_SATURATED_DRA: Final = (
    'configured GPU allocation policy "dra-resource-claim": no eligible DRA-capable candidate node has free '
    "GPUs ({n} matched; eligible candidates are saturated by existing ResourceClaim allocations — nodes "
    "excluded as NotReady or DRA-wired-but-scalar-occupied are not counted); free GPUs or pass "
    "--node-selector kubernetes.io/hostname=<empty-node>"
)
MSG_ZERO_CAPACITY: Final = (
    'candidate GPU node "{node}" reports 0 usable GPUs for the selected wiring (draWiring={dra})'
)
EVIDENCE_WIRING_HEADER: Final = "--- GPU allocation mode (worker GPU wiring) ---"
WIRING_DRA: Final = "DRA (gpu.nvidia.com ResourceClaimTemplate)"
WIRING_DEVICE_PLUGIN: Final = "device plugin (resources.limits nvidia.com/gpu)"
MSG_WIRING: Final = "worker GPU wiring: {wiring} (node-local decision for {node})"

# --- occupancy -----------------------------------------------------------


@dataclass(frozen=True)
class GPUOccupancy:
    """GPUs in use per node, kept per allocation ledger."""

    scalar_used: Mapping[str, int]
    dra_used: Mapping[str, int]


def _container_gpus(container: Mapping[str, Any]) -> int:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    if GPU_RESOURCE in requests:
        return gpu_count(requests)
    return gpu_count(resources.get("limits"))


def pod_effective_gpu_request(pod: Mapping[str, Any]) -> int:
    """Effective ``nvidia.com/gpu`` request of a pod, as the scheduler accounts it.

    ``max(Σ regular + Σ restartable-init sidecars, max over one-shot init containers of
    (sidecars started before it + its own))`` plus pod overhead; requests preferred, limits as
    fallback.
    """
    spec = pod.get("spec") or {}
    regular = sum(_container_gpus(c) for c in spec.get("containers") or [])
    sidecars = 0
    init_max = 0
    for c in spec.get("initContainers") or []:
        own = _container_gpus(c)
        if c.get("restartPolicy") == "Always":
            sidecars += own
        else:
            init_max = max(init_max, sidecars + own)
    return max(regular + sidecars, init_max) + gpu_count(spec.get("overhead"))


def _claim_name(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _request_classes(request: Mapping[str, Any]) -> list[str]:
    classes: list[str] = []
    if request.get("deviceClassName"):
        classes.append(str(request["deviceClassName"]))
    exactly = request.get("exactly")
    if isinstance(exactly, Mapping) and exactly.get("deviceClassName"):
        classes.append(str(exactly["deviceClassName"]))
    for sub in request.get("firstAvailable") or []:
        if isinstance(sub, Mapping) and sub.get("deviceClassName"):
            classes.append(str(sub["deviceClassName"]))
    return classes


def count_used_gpus_by_node(
    pods: Iterable[Mapping[str, Any]] | BaseException,
    claims: Iterable[Mapping[str, Any]] | BaseException | None,
    mode: AllocationMode | None,
) -> GPUOccupancy:
    """Per-node GPU occupancy, failing closed.

    ``pods``: every pod in the cluster (an iterable, e.g. a paginating generator) or the error
    the list raised.  ``claims``: every ResourceClaim at the served ``resource.k8s.io`` version,
    the list error, or ``None`` when ``resource.k8s.io`` is not served at all (zero DRA usage).
    An error — passed in or raised while iterating — raises :class:`InferenceFailure`.
    """
    if isinstance(pods, BaseException):
        raise InferenceFailure(MSG_POD_LIST_FAILED.format(error=pods)) from pods
    scalar: dict[str, int] = defaultdict(int)
    kep5004: set[tuple[str, str, str]] = set()
    try:
        for pod in pods:
            status = pod.get("status") or {}
            if status.get("phase") in ("Succeeded", "Failed"):
                continue
            spec = pod.get("spec") or {}
            bound = spec.get("nodeName")
            if not bound:
                continue
            used = pod_effective_gpu_request(pod)
            if used > 0:
                scalar[str(bound)] += used
            ext = status.get("extendedResourceClaimStatus")
            if isinstance(ext, Mapping):
                ns = str((pod.get("metadata") or {}).get("namespace") or "")
                claim_name = str(ext.get("resourceClaimName") or "")
                for mapping in ext.get("requestMappings") or []:
                    if isinstance(mapping, Mapping) and mapping.get("resourceName") == GPU_RESOURCE:
                        kep5004.add((ns, claim_name, str(mapping.get("requestName") or "")))
    except Exception as exc:
        raise InferenceFailure(MSG_POD_LIST_FAILED.format(error=exc)) from exc

    dra: dict[str, int] = defaultdict(int)
    if claims is None:
        return GPUOccupancy(dict(scalar), {})
    if isinstance(claims, BaseException):
        raise InferenceFailure(MSG_CLAIM_LIST_FAILED.format(error=claims)) from claims
    pool_nodes = mode.gpu_pool_nodes if mode is not None else {}
    claim_iter = iter(claims)
    while True:
        try:
            claim = next(claim_iter)
        except StopIteration:
            break
        except Exception as exc:
            raise InferenceFailure(MSG_CLAIM_LIST_FAILED.format(error=exc)) from exc
        allocation = (claim.get("status") or {}).get("allocation")
        if not isinstance(allocation, Mapping):
            continue
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            for device_class in _request_classes(request):
                if "gpu" in device_class.lower() and device_class != GPU_DRIVER:
                    raise UnsupportedGPUTopology(
                        MSG_FOREIGN_CLAIM_CLASS.format(claim=_claim_name(claim), device_class=device_class)
                    )
        meta = claim.get("metadata") or {}
        key_ns, key_name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        for result in (allocation.get("devices") or {}).get("results") or []:
            if result.get("driver") != GPU_DRIVER or result.get("adminAccess") is True:
                continue
            main_request = str(result.get("request") or "").split("/", 1)[0]
            if (key_ns, key_name, main_request) in kep5004:
                continue
            pool = str(result.get("pool") or "")
            owner = pool_nodes.get(pool)
            if owner is None:
                raise UnsupportedGPUTopology(
                    MSG_UNMAPPED_POOL.format(
                        claim=_claim_name(claim), device=result.get("device", ""), pool=pool
                    )
                )
            dra[owner] += 1
    return GPUOccupancy(dict(scalar), dict(dra))


# --- candidates and selection --------------------------------------------


def discover_candidate_nodes(
    nodes: Sequence[Mapping[str, Any]],
    mode: AllocationMode | None,
    policy: str | None,
    node_selector: Mapping[str, str] | None = None,
) -> list[Mapping[str, Any]]:
    """Candidate GPU nodes; ``--node-selector`` (``None`` = not given) narrows them by exact label match."""
    p = normalize_policy(policy)
    if p == POLICY_DRA_CLAIM:
        dra = set(mode.dra_nodes) if mode is not None else set()
        candidates = [n for n in nodes if node_name(n) in dra and not node_unschedulable(n)]
        if not candidates:
            raise InferenceFailure(MSG_NO_DRA_CANDIDATES)
    else:
        candidates = [n for n in nodes if not node_unschedulable(n) and node_scalar_gpus(n) > 0]
        if not candidates:
            if mode is not None and mode.dra_nodes:
                raise InferenceFailure(
                    MSG_DRA_ONLY_CLUSTER.format(n=len(mode.dra_nodes), names=", ".join(mode.dra_nodes))
                )
            raise InferenceFailure(MSG_NO_GPU_NODES)
    if node_selector is not None:
        wanted = dict(node_selector)
        candidates = [
            n
            for n in candidates
            if all(((n.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]
        if not candidates:
            raise InferenceFailure(MSG_SELECTOR_NO_MATCH.format(selector=go_map(wanted)))
    return candidates


@dataclass(frozen=True)
class NodeChoice:
    """The node the benchmark runs on and how its workers get GPUs."""

    node: Mapping[str, Any]
    name: str
    free_gpus: int
    node_gpus: int
    dra_wiring: bool
    candidates: int

    @property
    def wiring(self) -> str:
        return WIRING_DRA if self.dra_wiring else WIRING_DEVICE_PLUGIN


def _pairs(items: Mapping[str, int], unit: str) -> str:
    return ", ".join(f"{n} ({k} {unit})" for n, k in sorted(items.items()))


def select_worker_node(
    candidates: Sequence[Mapping[str, Any]],
    occupancy: GPUOccupancy,
    mode: AllocationMode | None,
    policy: str | None,
) -> NodeChoice:
    """Pick the candidate with the most free GPUs in its own ledger.

    Ties prefer DRA wiring, then the lexicographically smaller name.  NotReady nodes, nodes the
    probe found ineligible, kai-blocked nodes (raw node-local gpu.nvidia.com slices that did not
    validate) and DRA nodes holding scalar ``nvidia.com/gpu`` workloads are excluded, not counted
    as saturated.
    """
    p = normalize_policy(policy)
    dra_nodes = set(mode.dra_nodes) if mode is not None else set()
    dp_nodes = set(mode.device_plugin_nodes) if mode is not None else set()
    raw = mode.node_local_gpu_slice_devices if mode is not None else {}
    kai_blocked: dict[str, int] = {}
    scalar_on_dra: dict[str, int] = {}
    best: tuple[int, int, str] | None = None  # (free, dra-rank, name); max free, DRA first, min name
    best_entry: tuple[Mapping[str, Any], int, bool] | None = None
    for node in candidates:
        name = node_name(node)
        if not node_ready(node):
            continue
        scalar_used = occupancy.scalar_used.get(name, 0)
        if name in dra_nodes:
            if p == POLICY_DEVICE_PLUGIN:
                continue
            if scalar_used > 0:
                scalar_on_dra[name] = scalar_used
                continue
            capacity = mode.dra_node_devices.get(name, 0) if mode is not None else 0
            used = occupancy.dra_used.get(name, 0)
            dra_wiring = True
        elif raw.get(name, 0) > 0:
            kai_blocked[name] = raw[name]
            continue
        elif mode is None or name in dp_nodes:
            if p == POLICY_DRA_CLAIM:
                continue
            capacity = node_scalar_gpus(node)
            used = scalar_used + occupancy.dra_used.get(name, 0)
            dra_wiring = False
        else:
            continue
        free = max(0, capacity - used)
        rank = 1 if dra_wiring else 0
        if best is None or (free, rank) > best[:2] or ((free, rank) == best[:2] and name < best[2]):
            best = (free, rank, name)
            best_entry = (node, capacity, dra_wiring)
    n = len(candidates)
    if best is None or best_entry is None:
        message = (MSG_NO_ELIGIBLE_DRA if p == POLICY_DRA_CLAIM else MSG_NO_ELIGIBLE).format(n=n)
        if kai_blocked:
            message += ". " + MSG_OFFENDERS_KAI.format(nodes=_pairs(kai_blocked, "raw device(s)"))
        if scalar_on_dra:
            message += ". " + MSG_OFFENDERS_SCALAR.format(nodes=_pairs(scalar_on_dra, "scalar GPU(s) in use"))
        raise InferenceFailure(message)
    free, _, name = best
    node, capacity, dra_wiring = best_entry
    if free <= 0:
        raise InferenceFailure((MSG_SATURATED_DRA if p == POLICY_DRA_CLAIM else MSG_SATURATED).format(n=n))
    if capacity <= 0:  # unreachable while free > 0; kept for parity with AICR
        raise InferenceFailure(MSG_ZERO_CAPACITY.format(node=name, dra="true" if dra_wiring else "false"))
    return NodeChoice(
        node=node, name=name, free_gpus=free, node_gpus=capacity, dra_wiring=dra_wiring, candidates=n
    )


def wiring_evidence(mode: AllocationMode, choice: NodeChoice) -> str:
    """The ``--- GPU allocation mode (worker GPU wiring) ---`` evidence block."""
    return "\n".join(
        [EVIDENCE_WIRING_HEADER, mode.summary(), MSG_WIRING.format(wiring=choice.wiring, node=choice.name)]
    )


def worker_tolerations(
    node: Mapping[str, Any], cli_tolerations: Sequence[Mapping[str, str]] | None
) -> list[dict[str, str]]:
    """``--toleration`` list when given, else one ``Equal`` toleration per chosen-node taint
    (keys under ``node.kubernetes.io/`` excluded)."""
    if cli_tolerations is not None:
        return [dict(t) for t in cli_tolerations]
    out: list[dict[str, str]] = []
    for taint in (node.get("spec") or {}).get("taints") or []:
        key = str(taint.get("key") or "")
        if not key or key.startswith("node.kubernetes.io/"):
            continue
        tol = {"key": key, "operator": "Equal", "value": str(taint.get("value") or "")}
        if taint.get("effect"):
            tol["effect"] = str(taint["effect"])
        out.append(tol)
    return out
