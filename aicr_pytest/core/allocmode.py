"""GPU allocation-mode probe: how does this cluster hand out whole GPUs?

Pure functions over plain Kubernetes-object dicts.
The caller lists Nodes, discovers the newest served ``resource.k8s.io`` version (v1 → v1beta2 →
v1beta1; ``None`` when the group is not served), lists DeviceClasses and ResourceSlices at that
version, and hands the results to :func:`detect`.  The result, :class:`AllocationMode`, carries the
per-node facts every consumer needs:

* conformance checks (dra-support, secure-accelerator-access) use ``dra_usable`` /
  ``device_plugin_usable`` and :meth:`AllocationMode.summary` as evidence;
* inference-perf also uses the kai-scheduler-style raw view of ``gpu.nvidia.com`` slices
  (per-node raw device counts, pool → node map, foreign drivers, non-node-local slices,
  ambiguous pools) through :func:`reject_unsupported_gpu_topology`.

:func:`verify_policy` compares the recipe's configured allocation policy against the probe and
fails closed on mismatch — a cluster that cannot serve the configured mechanism is a failure,
never a silent fallback.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from aicr_pytest.core.errors import CheckFailed, UsageError
from aicr_pytest.core.gofmt import go_bool, go_list

GPU_DRIVER: Final = "gpu.nvidia.com"
GPU_DEVICE_CLASS: Final = "gpu.nvidia.com"
GPU_RESOURCE: Final = "nvidia.com/gpu"
DRA_VERSIONS: Final = ("v1", "v1beta2", "v1beta1")

POLICY_UNSPECIFIED: Final = "unspecified"
POLICY_DEVICE_PLUGIN: Final = "device-plugin-extended-resource"
POLICY_DRA_CLAIM: Final = "dra-resource-claim"
POLICY_DRA_EXTENDED: Final = "dra-extended-resource"
POLICIES: Final = (POLICY_UNSPECIFIED, POLICY_DEVICE_PLUGIN, POLICY_DRA_CLAIM, POLICY_DRA_EXTENDED)

# --- messages -------------------------------------
MSG_DRA_NO_API: Final = (
    "full-GPU DRA not usable: no served resource.k8s.io API version — DeviceClass gpu.nvidia.com unreachable"
)
MSG_DRA_NO_CLASS: Final = "full-GPU DRA not usable: DeviceClass gpu.nvidia.com not found"
MSG_DRA_HALF_INSTALLED: Final = (
    " — but {n} Ready, schedulable node(s) carry validated gpu.nvidia.com ResourceSlice devices: the DRA "
    "driver looks HALF-INSTALLED (slices published without the DeviceClass)"
)
MSG_DRA_NO_SLICES: Final = (
    "full-GPU DRA not usable: DeviceClass gpu.nvidia.com exists but no ResourceSlices from driver "
    "gpu.nvidia.com"
)
MSG_DRA_NO_USABLE_POOL: Final = (
    "full-GPU DRA not usable: DeviceClass gpu.nvidia.com exists but no complete, current-generation "
    "ResourceSlice pool advertises an untainted device on a Ready, schedulable node"
)
MSG_DRA_USABLE: Final = (
    "full-GPU DRA usable: DeviceClass gpu.nvidia.com exists (resource.k8s.io/{version}) and {n} Ready, "
    "schedulable node(s) have advertised devices"
)
MSG_DRA_CEL_NOTE: Final = "; note: DeviceClass carries {k} CEL selector(s) that this probe does not evaluate"
MSG_DP_USABLE: Final = "device plugin usable: {n} Ready, schedulable node(s) with allocatable nvidia.com/gpu"
MSG_DP_NOT_USABLE: Final = (
    "device plugin not usable: no Ready, schedulable node advertises allocatable nvidia.com/gpu"
)
MSG_EXT_PRESENT: Final = (
    "KEP-5004 extended resource: DeviceClass(es) {names} map nvidia.com/gpu via extendedResourceName "
    "(attribution evidence only)"
)
MSG_EXT_ABSENT: Final = (
    "KEP-5004 extended resource: no DeviceClass maps nvidia.com/gpu via extendedResourceName"
)
MSG_TAINT_NOTE: Final = (
    "note: node eligibility is Ready+uncordoned only — node taints are not evaluated; "
    "workloads must tolerate any node taints"
)
MSG_WARN_DUAL: Final = (
    "WARNING: dual advertisement: node(s) {nodes} advertise both usable gpu.nvidia.com DRA devices and "
    "allocatable nvidia.com/gpu"
)
MSG_WARN_FOREIGN: Final = "WARNING: ResourceSlices from non-NVIDIA GPU driver(s) {drivers}"
MSG_WARN_NON_NODE_LOCAL: Final = (
    "WARNING: gpu.nvidia.com ResourceSlice(s) {names} use a non-node-local topology "
    "(nodeSelector/allNodes/perDeviceNodeSelection)"
)
MSG_WARN_AMBIGUOUS: Final = "WARNING: gpu.nvidia.com pool(s) published by more than one node: {pools}"
MSG_WARN_RAW_UNUSABLE: Final = (
    "WARNING: node(s) {nodes} carry raw gpu.nvidia.com ResourceSlice devices that did not validate as "
    "usable (kai-scheduler still treats them as DRA-only nodes)"
)

MSG_TOPO_FOREIGN_DRIVER: Final = (
    "unsupported GPU DRA configuration: ResourceSlices from non-NVIDIA GPU driver(s) {drivers} — only "
    "gpu.nvidia.com full-GPU slices are supported (issue #1327; generalized driver support is tracked "
    "in #1652)"
)
MSG_TOPO_NON_NODE_LOCAL: Final = (
    "unsupported GPU DRA configuration: gpu.nvidia.com ResourceSlice(s) {names} use a non-node-local "
    "topology (nodeSelector/allNodes/perDeviceNodeSelection) — only node-local slices (spec.nodeName) "
    "are supported (issue #1327; generalized topology support is tracked in #1652)"
)
MSG_TOPO_AMBIGUOUS_POOL: Final = (
    "unsupported GPU DRA configuration: gpu.nvidia.com pool(s) published by node-local slices of more "
    "than one node: {pools} — GPU occupancy cannot be attributed to a single node (issue #1327; "
    "generalized topology support is tracked in #1652)"
)

MSG_POLICY_HEADER: Final = "--- GPU allocation policy ---"
MSG_MISMATCH_DRA: Final = (
    'GPU allocation policy mismatch: the recipe configures "dra-resource-claim" but the cluster has no '
    "usable full-GPU DRA (gpu.nvidia.com DeviceClass + validated ResourceSlices).\n"
    "Observed state:\n{summary}\n"
    "Likely cause: the nvidia-dra-driver-gpu component is not deployed with resources.gpus.enabled=true, "
    "its gpu.nvidia.com ResourceSlices are incomplete or tainted, or no Ready, schedulable node "
    "publishes them (issue #1327)"
)
MSG_MISMATCH_DEVICE_PLUGIN: Final = (
    'GPU allocation policy mismatch: the recipe configures "device-plugin-extended-resource" but no '
    "Ready, schedulable node advertises allocatable nvidia.com/gpu.\n"
    "Observed state:\n{summary}\n"
    "Likely cause: the GPU Operator device plugin is disabled or not rolled out yet, or every GPU node "
    "is NotReady or cordoned (issue #1327)"
)
MSG_POLICY_RESERVED: Final = (
    'GPU allocation policy "dra-extended-resource" is reserved (KEP-5004 mapped extended resource) and '
    "not yet validated by AICR (issue #1327)"
)
MSG_POLICY_UNKNOWN: Final = (
    'unknown GPU allocation policy "{policy}" (valid: unspecified, device-plugin-extended-resource, '
    "dra-resource-claim)"
)


class AllocModeError(CheckFailed):
    """A GPU allocation configuration the check must fail on (AICR ``INVALID_REQUEST`` → failed).

    An ``AssertionError`` so pytest reports it as a failure (CTRF ``failed``), not ``other``.
    """


class UnsupportedGPUTopology(AllocModeError):
    """DRA topology outside the NVIDIA DRA driver's supported configuration (#1327/#1652)."""


class AllocationPolicyMismatch(AllocModeError):
    """The cluster cannot serve the recipe's configured GPU allocation policy (fail closed)."""


# --- small readers -----------------------------------------------------------------------------

_QUANTITY_RE = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)
_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


def parse_quantity(value: object) -> Decimal:
    """A Kubernetes resource quantity (``8``, ``100Gi``, ``500m``, ``1e3``) as a Decimal.

    Raises ``ValueError`` on anything ``resource.ParseQuantity`` would reject.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise ValueError(f"not a quantity: {value!r}")
    m = _QUANTITY_RE.match(value)
    if m is None:
        raise ValueError(f"not a quantity: {value!r}")
    try:
        number = Decimal(m.group(1))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimal text
        raise ValueError(f"not a quantity: {value!r}") from exc
    suffix = m.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    if suffix:
        return number.scaleb(int(suffix[1:]))
    return number


def gpu_count(resources: Mapping[str, Any] | None, name: str = GPU_RESOURCE) -> int:
    """Whole devices of ``name`` in a resource map (allocatable, requests, limits); bad value → 0."""
    if not resources:
        return 0
    raw = resources.get(name)
    if raw is None:
        return 0
    try:
        q = parse_quantity(raw)
    except ValueError:
        return 0
    return max(0, int(q))


def node_name(node: Mapping[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def node_ready(node: Mapping[str, Any]) -> bool:
    """Condition ``Ready`` has status ``True``."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def node_unschedulable(node: Mapping[str, Any]) -> bool:
    return (node.get("spec") or {}).get("unschedulable") is True


def node_eligible(node: Mapping[str, Any]) -> bool:
    """Ready and uncordoned — taints are deliberately not evaluated."""
    return node_ready(node) and not node_unschedulable(node)


def node_scalar_gpus(node: Mapping[str, Any]) -> int:
    return gpu_count((node.get("status") or {}).get("allocatable"))


def newest_served_version(served: Iterable[str]) -> str | None:
    """The preferred served ``resource.k8s.io`` version (v1 → v1beta2 → v1beta1), or ``None``."""
    available = set(served)
    return next((v for v in DRA_VERSIONS if v in available), None)


# --- the probe ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllocationMode:
    """Per-node GPU allocation facts (AICR ``allocmode.Mode``)."""

    api_version: str | None
    gpu_device_class: bool
    device_class_cel_selectors: int
    extended_resource_classes: tuple[str, ...]
    eligible_nodes: frozenset[str]
    dra_usable: bool
    dra_nodes: tuple[str, ...]
    dra_node_devices: Mapping[str, int]
    validated_slice_nodes: tuple[str, ...]
    gpu_slices_seen: bool
    node_local_gpu_slice_devices: Mapping[str, int]
    gpu_pool_nodes: Mapping[str, str]
    ambiguous_gpu_pools: Mapping[str, tuple[str, ...]]
    foreign_gpu_slice_drivers: tuple[str, ...]
    non_node_local_gpu_slices: tuple[str, ...]
    device_plugin_usable: bool
    device_plugin_nodes: tuple[str, ...]
    device_plugin_node_gpus: Mapping[str, int]
    dual_advertised_nodes: tuple[str, ...] = field(default=())

    @property
    def dra_detail(self) -> str:
        if self.api_version is None:
            return MSG_DRA_NO_API
        if not self.gpu_device_class:
            detail = MSG_DRA_NO_CLASS
            if self.validated_slice_nodes:
                detail += MSG_DRA_HALF_INSTALLED.format(n=len(self.validated_slice_nodes))
            return detail
        if not self.gpu_slices_seen:
            return MSG_DRA_NO_SLICES
        if not self.dra_usable:
            return MSG_DRA_NO_USABLE_POOL
        detail = MSG_DRA_USABLE.format(version=self.api_version, n=len(self.dra_nodes))
        if self.device_class_cel_selectors:
            detail += MSG_DRA_CEL_NOTE.format(k=self.device_class_cel_selectors)
        return detail

    @property
    def device_plugin_detail(self) -> str:
        if self.device_plugin_usable:
            return MSG_DP_USABLE.format(n=len(self.device_plugin_nodes))
        return MSG_DP_NOT_USABLE

    @property
    def extended_resource_detail(self) -> str:
        if self.extended_resource_classes:
            return MSG_EXT_PRESENT.format(names=go_list(self.extended_resource_classes))
        return MSG_EXT_ABSENT

    @property
    def kai_blocked_nodes(self) -> tuple[str, ...]:
        """Nodes with raw node-local gpu.nvidia.com devices that did not validate as DRA-usable."""
        dra = set(self.dra_nodes)
        return tuple(
            sorted(n for n, k in self.node_local_gpu_slice_devices.items() if k > 0 and n not in dra)
        )

    def warnings(self) -> list[str]:
        out: list[str] = []
        if self.dual_advertised_nodes:
            out.append(MSG_WARN_DUAL.format(nodes=go_list(self.dual_advertised_nodes)))
        if self.foreign_gpu_slice_drivers:
            out.append(MSG_WARN_FOREIGN.format(drivers=go_list(self.foreign_gpu_slice_drivers)))
        if self.non_node_local_gpu_slices:
            out.append(MSG_WARN_NON_NODE_LOCAL.format(names=go_list(self.non_node_local_gpu_slices)))
        if self.ambiguous_gpu_pools:
            out.append(MSG_WARN_AMBIGUOUS.format(pools=_describe_pools(self.ambiguous_gpu_pools)))
        blocked = [n for n in self.kai_blocked_nodes if n in self.eligible_nodes]
        if blocked:
            out.append(MSG_WARN_RAW_UNUSABLE.format(nodes=go_list(blocked)))
        return out

    def summary(self) -> str:
        """Multi-line evidence text (AICR ``Mode.Summary()``)."""
        lines = [
            f"DRA ({GPU_DRIVER}): usable={go_bool(self.dra_usable)} nodes={go_list(self.dra_nodes)}",
            f"Device plugin ({GPU_RESOURCE}): usable={go_bool(self.device_plugin_usable)} "
            f"nodes={go_list(self.device_plugin_nodes)}",
            self.dra_detail,
            self.device_plugin_detail,
            self.extended_resource_detail,
            MSG_TAINT_NOTE,
            *self.warnings(),
        ]
        return "\n".join(lines)


def _describe_pools(pools: Mapping[str, Sequence[str]]) -> str:
    return ", ".join(f"{pool} ({', '.join(nodes)})" for pool, nodes in sorted(pools.items()))


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _device_field(device: Mapping[str, Any], key: str) -> Any:
    """A device field, top-level (v1/v1beta2) or under ``basic`` (v1beta1)."""
    if key in device:
        return device[key]
    basic = device.get("basic")
    if isinstance(basic, Mapping):
        return basic.get(key)
    return None


def _device_tainted(device: Mapping[str, Any]) -> bool:
    for taint in _device_field(device, "taints") or []:
        if isinstance(taint, Mapping) and taint.get("effect") in ("NoSchedule", "NoExecute"):
            return True
    return False


def _match_expression(expr: Mapping[str, Any], values_of: Mapping[str, str]) -> bool:
    key = expr.get("key")
    op = expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    present = key in values_of
    if op == "In":
        return present and values_of[str(key)] in values
    if op == "NotIn":
        return not present or values_of[str(key)] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return False  # Gt/Lt and unknown operators never match


def node_selector_matches(selector: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A core/v1 ``NodeSelector``: terms ORed, expressions ANDed; matchFields only ``metadata.name``."""
    labels = {str(k): str(v) for k, v in ((node.get("metadata") or {}).get("labels") or {}).items()}
    fields = {"metadata.name": node_name(node)}
    for term in selector.get("nodeSelectorTerms") or []:
        if not isinstance(term, Mapping):
            continue
        exprs = list(term.get("matchExpressions") or [])
        field_exprs = list(term.get("matchFields") or [])
        if not exprs and not field_exprs:
            continue  # an empty term matches nothing
        if all(_match_expression(e, labels) for e in exprs) and all(
            e.get("key") == "metadata.name" and _match_expression(e, fields) for e in field_exprs
        ):
            return True
    return False


def _attributed_nodes(topology: Mapping[str, Any], eligible: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Eligible node names reachable through a slice's (or device's) topology fields."""
    name = topology.get("nodeName")
    if name:
        return [str(name)] if str(name) in eligible else []
    if topology.get("allNodes") is True:
        return list(eligible)
    selector = topology.get("nodeSelector")
    if isinstance(selector, Mapping):
        return [n for n, node in eligible.items() if node_selector_matches(selector, node)]
    return []


def _valid_pool_slices(slices: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The current-generation slices of one pool, or ``[]`` when the pool is incomplete."""

    def generation(s: Mapping[str, Any]) -> int:
        try:
            return int((_spec(s).get("pool") or {}).get("generation") or 0)
        except (TypeError, ValueError):
            return 0

    top = max(generation(s) for s in slices)
    current = [s for s in slices if generation(s) == top]
    counts = {(_spec(s).get("pool") or {}).get("resourceSliceCount") for s in current}
    if len(counts) != 1:
        return []
    (count,) = counts
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0 or len(current) != count:
        return []
    names: set[str] = set()
    for s in current:
        for dev in _spec(s).get("devices") or []:
            dev_name = str((dev or {}).get("name") or "")
            if dev_name in names:
                return []
            names.add(dev_name)
    return current


def _usable_devices(
    pools: Mapping[str, Sequence[Mapping[str, Any]]], eligible: Mapping[str, Mapping[str, Any]]
) -> dict[str, int]:
    """Untainted devices of complete, current-generation pools, per eligible node they reach."""
    usable: dict[str, int] = defaultdict(int)
    for pool_slices in pools.values():
        for s in _valid_pool_slices(pool_slices):
            spec = _spec(s)
            per_device = spec.get("perDeviceNodeSelection") is True
            for dev in spec.get("devices") or []:
                if not isinstance(dev, Mapping) or _device_tainted(dev):
                    continue
                topo: Mapping[str, Any]
                if per_device:
                    topo = {k: _device_field(dev, k) for k in ("nodeName", "allNodes", "nodeSelector")}
                else:
                    topo = spec
                for n in _attributed_nodes(topo, eligible):
                    usable[n] += 1
    return dict(usable)


def validated_driver_nodes(
    nodes: Sequence[Mapping[str, Any]], resource_slices: Sequence[Mapping[str, Any]], driver: str
) -> dict[str, int]:
    """Usable devices per eligible node for one DRA ``driver`` (the allocation-mode probe's
    pool/taint/topology rules).

    A slice counts only in a complete, current-generation pool, for untainted devices, on Ready,
    uncordoned nodes its topology reaches. dra-support applies this to every ``*.nvidia.com``
    driver (``compute-domain.nvidia.com`` too); :func:`detect` to ``gpu.nvidia.com``.
    """
    eligible = {node_name(n): n for n in nodes if node_eligible(n)}
    pools: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for s in resource_slices:
        if str(_spec(s).get("driver") or "") == driver:
            pools[str((_spec(s).get("pool") or {}).get("name") or "")].append(s)
    return dict(sorted(_usable_devices(pools, eligible).items()))


def detect(
    nodes: Sequence[Mapping[str, Any]],
    api_version: str | None,
    device_classes: Sequence[Mapping[str, Any]] = (),
    resource_slices: Sequence[Mapping[str, Any]] = (),
) -> AllocationMode:
    """Build the allocation-mode facts from listed objects.

    ``api_version`` is the newest served ``resource.k8s.io`` version, or ``None`` when the group
    is not served (then DeviceClasses/ResourceSlices are ignored).
    """
    eligible = {node_name(n): n for n in nodes if node_eligible(n)}
    dp_gpus = {name: node_scalar_gpus(n) for name, n in eligible.items() if node_scalar_gpus(n) > 0}
    dp_nodes = tuple(sorted(dp_gpus))

    if api_version is None:
        device_classes, resource_slices = (), ()

    gpu_class: Mapping[str, Any] | None = None
    ext_classes: list[str] = []
    for dc in device_classes:
        dc_name = str((dc.get("metadata") or {}).get("name") or "")
        if dc_name == GPU_DEVICE_CLASS:
            gpu_class = dc
        if _spec(dc).get("extendedResourceName") == GPU_RESOURCE:
            ext_classes.append(dc_name)
    cel = len(_spec(gpu_class).get("selectors") or []) if gpu_class is not None else 0

    raw_devices: dict[str, int] = defaultdict(int)
    pool_nodes: dict[str, set[str]] = defaultdict(set)
    foreign: set[str] = set()
    non_local: list[str] = []
    pools: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for s in resource_slices:
        spec = _spec(s)
        driver = str(spec.get("driver") or "")
        if driver != GPU_DRIVER:
            if "gpu" in driver.lower():
                foreign.add(driver)
            continue
        pool_name = str((spec.get("pool") or {}).get("name") or "")
        pools[pool_name].append(s)
        slice_node = spec.get("nodeName")
        if slice_node:
            devices = len(spec.get("devices") or [])
            if devices:
                raw_devices[str(slice_node)] += devices
            pool_nodes[pool_name].add(str(slice_node))
        else:
            non_local.append(str((s.get("metadata") or {}).get("name") or ""))

    usable = _usable_devices(pools, eligible)

    validated = tuple(sorted(usable))
    dra_devices = dict(sorted(usable.items())) if gpu_class is not None else {}
    dra_nodes = tuple(sorted(dra_devices))
    return AllocationMode(
        api_version=api_version,
        gpu_device_class=gpu_class is not None,
        device_class_cel_selectors=cel,
        extended_resource_classes=tuple(sorted(ext_classes)),
        eligible_nodes=frozenset(eligible),
        dra_usable=bool(dra_nodes),
        dra_nodes=dra_nodes,
        dra_node_devices=dra_devices,
        validated_slice_nodes=validated,
        gpu_slices_seen=bool(pools),
        node_local_gpu_slice_devices=dict(sorted(raw_devices.items())),
        gpu_pool_nodes={p: next(iter(ns)) for p, ns in sorted(pool_nodes.items()) if len(ns) == 1},
        ambiguous_gpu_pools={p: tuple(sorted(ns)) for p, ns in sorted(pool_nodes.items()) if len(ns) > 1},
        foreign_gpu_slice_drivers=tuple(sorted(foreign)),
        non_node_local_gpu_slices=tuple(sorted(non_local)),
        device_plugin_usable=bool(dp_nodes),
        device_plugin_nodes=dp_nodes,
        device_plugin_node_gpus=dp_gpus,
        dual_advertised_nodes=tuple(sorted(set(dra_nodes) & set(dp_nodes))),
    )


def reject_unsupported_gpu_topology(mode: AllocationMode) -> None:
    """Fail fast on DRA topologies outside the supported pair.

    Raises :class:`UnsupportedGPUTopology` for "gpu"-named slice drivers other than
    ``gpu.nvidia.com``, ``gpu.nvidia.com`` slices without ``spec.nodeName`` and pools published by
    more than one node.
    """
    if mode.foreign_gpu_slice_drivers:
        raise UnsupportedGPUTopology(
            MSG_TOPO_FOREIGN_DRIVER.format(drivers=go_list(mode.foreign_gpu_slice_drivers))
        )
    if mode.non_node_local_gpu_slices:
        raise UnsupportedGPUTopology(
            MSG_TOPO_NON_NODE_LOCAL.format(names=go_list(mode.non_node_local_gpu_slices))
        )
    if mode.ambiguous_gpu_pools:
        raise UnsupportedGPUTopology(
            MSG_TOPO_AMBIGUOUS_POOL.format(pools=_describe_pools(mode.ambiguous_gpu_pools))
        )


def normalize_policy(policy: str | None) -> str:
    """Empty/absent → ``unspecified``; otherwise the trimmed value."""
    return (policy or "").strip() or POLICY_UNSPECIFIED


def policy_evidence(policy: str | None, mode: AllocationMode) -> str:
    """``--- GPU allocation policy ---`` block printed before the verdict."""
    return f"{MSG_POLICY_HEADER}\nconfigured policy: {normalize_policy(policy)}\n{mode.summary()}"


def verify_policy(policy: str | None, mode: AllocationMode) -> str:
    """Check the configured policy against the probe; return the normalized policy.

    Fails closed: :class:`AllocationPolicyMismatch` when the cluster cannot serve the configured
    mechanism (or the reserved ``dra-extended-resource`` is configured); :class:`UsageError`
    for a policy name that does not exist.
    """
    p = normalize_policy(policy)
    if p == POLICY_UNSPECIFIED:
        return p
    if p == POLICY_DRA_CLAIM:
        if not mode.dra_usable:
            raise AllocationPolicyMismatch(MSG_MISMATCH_DRA.format(summary=mode.summary()))
        return p
    if p == POLICY_DEVICE_PLUGIN:
        if not mode.device_plugin_usable:
            raise AllocationPolicyMismatch(MSG_MISMATCH_DEVICE_PLUGIN.format(summary=mode.summary()))
        return p
    if p == POLICY_DRA_EXTENDED:
        raise AllocationPolicyMismatch(MSG_POLICY_RESERVED)
    raise UsageError(MSG_POLICY_UNKNOWN.format(policy=p))
