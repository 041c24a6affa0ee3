"""``gpu-inventory``: does every targeted GPU node hand out the GPUs it has, and do the nodes match?

For each node the check compares three counts:

* **allocatable** — chosen by the recipe's GPU allocation policy
  (:mod:`aicr_pytest.core.policy`): ``device-plugin-extended-resource`` reads the node's allocatable
  ``nvidia.com/gpu``; ``dra-resource-claim`` counts the node's usable ``gpu.nvidia.com`` ResourceSlice
  devices (complete, current-generation pools, untainted devices:
  :func:`aicr_pytest.core.allocmode.validated_driver_nodes`); ``unspecified`` uses the device plugin
  when the node lists ``nvidia.com/gpu`` in its allocatable, else the ResourceSlices;
* **advertised** — the GPU Feature Discovery label ``nvidia.com/gpu.count``;
* **driver** — what the driver reports on the node: a :class:`DriverReport` (on a live cluster the
  number of distinct GPUs NVML reports through the node's own DCGM exporter,
  :func:`exporter_gpu_count`, or GFD's label where the node runs no exporter; see
  :mod:`aicr_pytest.health.cluster`), ``nvidia-smi -L`` output, or a count the caller already has.

and checks that the node set is homogeneous in product (``nvidia.com/gpu.product``), GPU count and
fabric devices (allocatable EFA, RDMA and NVIDIA NIC resources).  A failure names every odd node
and what differs (``node ip-10-0-1-7: 7 of 8 GPUs allocatable``).  A missing or unparsable label,
quantity or driver report is inconclusive for that node, never a pass.

When no majority value exists (two nodes, two products), every node is named with its value.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aicr_pytest.core import allocmode
from aicr_pytest.core.errors import UsageError
from aicr_pytest.health.common import conclude, plural
from aicr_pytest.health.exporter import ExporterScrape

GPU_RESOURCE: Final = allocmode.GPU_RESOURCE
GPU_DRIVER: Final = allocmode.GPU_DRIVER
LABEL_COUNT: Final = "nvidia.com/gpu.count"
LABEL_PRODUCT: Final = "nvidia.com/gpu.product"
#: Allocatable resources that are fabric devices: exact names and name prefixes.
FABRIC_RESOURCES: Final = ("vpc.amazonaws.com/efa",)
FABRIC_PREFIXES: Final = (
    "rdma/",
    "nvidia.com/rdma",
    "nvidia.com/sriov",
    "nvidia.com/hostdev",
    "nvidia.com/mlnx",
)

MSG_NO_NODES: Final = "no GPU node to inventory"
MSG_LABEL_MISSING: Final = "node {node}: label {label} missing"
MSG_LABEL_BAD: Final = "node {node}: label {label}={value!r} is not a GPU count"
MSG_QUANTITY_BAD: Final = "node {node}: allocatable {resource}={value!r} is not a whole quantity"
MSG_NO_DRIVER_REPORT: Final = (
    "node {node}: no driver report (neither a DCGM exporter on the node nor GFD's {label} label)"
)
MSG_DRIVER_BAD: Final = "node {node}: driver report unreadable: {why}"
MSG_POLICY_RESERVED: Final = (
    'node {node}: GPU allocation policy "dra-extended-resource" is reserved and cannot be inventoried'
)
MSG_POLICY_UNKNOWN: Final = (
    'unknown GPU allocation policy "{policy}" (valid: unspecified, device-plugin-extended-resource, '
    "dra-resource-claim)"
)
MSG_ALLOC_SHORT: Final = "node {node}: {alloc} of {count} GPUs allocatable"
MSG_ALLOC_EXTRA: Final = "node {node}: {alloc} GPUs allocatable but the node advertises {count}"
MSG_DRIVER_DIFFERS: Final = (
    "node {node}: the driver reports {driver} GPUs but {alloc} are allocatable "
    "and the node advertises {count}"
)
MSG_ODD: Final = "node {node}: {what} {value}, {others} {have} {majority}"
MSG_NO_MAJORITY: Final = "node {node}: {what} {value} (the nodes differ and no value is the majority)"
MSG_PASSED: Final = "GPU inventory consistent on {nodes}: {count} x {product} each, fabric {fabric}"

_SMI_GPU_LINE: Final = re.compile(r"^GPU (\d+): .+")
_SMI_NO_DEVICES: Final = "No devices were found"
#: the prefix of the DCGM exporter's per-device series (one per GPU, or per MIG instance of a GPU)
DCGM_DEVICE_PREFIX: Final = "DCGM_FI_DEV_"
SOURCE_SMI: Final = "nvidia-smi -L"
SOURCE_GIVEN: Final = "a count the caller gave"


@dataclass(frozen=True)
class DriverReport:
    """A node's driver-side GPU count and where it was read; ``problem`` (then ``count`` is
    ``None``) says why it could not be."""

    source: str
    count: int | None = None
    problem: str | None = None


@dataclass(frozen=True)
class NodeInventory:
    """What one node says about its GPUs (``None``: unknown; see ``inconclusive``)."""

    node: str
    source: str
    allocatable: int | None
    advertised: int | None
    driver: int | None
    product: str | None
    fabric: tuple[tuple[str, int], ...]
    inconclusive: tuple[str, ...] = ()
    driver_source: str = ""

    def as_extra(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "allocatable": self.allocatable,
            "allocatable_source": self.source,
            "advertised": self.advertised,
            "driver": self.driver,
            "driver_source": self.driver_source,
            "product": self.product,
            "fabric": dict(self.fabric),
        }


@dataclass(frozen=True)
class InventoryReport:
    nodes: tuple[NodeInventory, ...]
    failures: tuple[str, ...]
    inconclusive: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)


def driver_gpu_count(report: str | int) -> int:
    """GPUs in a driver report: an int as is, or ``nvidia-smi -L`` output (one ``GPU n: ...`` line per
    GPU; indented MIG lines are ignored; ``No devices were found`` is 0).  ``ValueError`` otherwise."""
    if isinstance(report, bool):
        raise ValueError(f"not a GPU count: {report!r}")
    if isinstance(report, int):
        if report < 0:
            raise ValueError(f"negative GPU count {report}")
        return report
    lines = [line.rstrip() for line in report.splitlines() if line.strip()]
    if not lines:
        raise ValueError("empty nvidia-smi output")
    if len(lines) == 1 and lines[0].strip() == _SMI_NO_DEVICES:
        return 0
    indexes: set[int] = set()
    for line in lines:
        if line[:1].isspace():
            continue  # "  MIG 1g.10gb Device 0: ..." under its GPU
        m = _SMI_GPU_LINE.match(line)
        if m is None:
            raise ValueError(f"unexpected nvidia-smi line {line.strip()[:80]!r}")
        indexes.add(int(m.group(1)))
    return len(indexes)


def exporter_gpu_count(scrape: ExporterScrape) -> int:
    """Distinct GPUs among the ``DCGM_FI_DEV_*`` series of one exporter scrape: by the ``gpu`` label
    (a GPU's MIG instances share it), by ``UUID`` where a series has no ``gpu`` label; series with
    neither say nothing about a GPU."""
    gpus: set[tuple[str, str]] = set()
    for sample in scrape.samples:
        if not sample.name.startswith(DCGM_DEVICE_PREFIX):
            continue
        gpu, uuid = sample.label("gpu"), sample.label("UUID")
        if gpu:
            gpus.add(("gpu", gpu))
        elif uuid:
            gpus.add(("UUID", uuid))
    return len(gpus)


def _driver(name: str, report: str | int | DriverReport | None, unsure: list[str]) -> tuple[int | None, str]:
    """The driver's count and its source; unknown: ``None`` and an inconclusive line."""
    if report is None:
        unsure.append(MSG_NO_DRIVER_REPORT.format(node=name, label=LABEL_COUNT))
        return None, ""
    raw: str | int
    if isinstance(report, DriverReport):
        source = report.source
        if report.problem is not None or report.count is None:
            unsure.append(MSG_DRIVER_BAD.format(node=name, why=report.problem or "no GPU count"))
            return None, source
        raw = report.count
    else:
        source, raw = (SOURCE_SMI if isinstance(report, str) else SOURCE_GIVEN), report
    try:
        return driver_gpu_count(raw), source
    except ValueError as exc:
        unsure.append(MSG_DRIVER_BAD.format(node=name, why=exc))
        return None, source


def is_fabric_resource(name: str) -> bool:
    return name in FABRIC_RESOURCES or name.startswith(FABRIC_PREFIXES)


def _meta(node: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = (node.get("metadata") or {}).get(key)
    return value if isinstance(value, Mapping) else {}


def _whole(value: object) -> int | None:
    try:
        q = allocmode.parse_quantity(value)
    except ValueError:
        return None
    return int(q) if q == q.to_integral_value() and q >= 0 else None


def _label_count(node: str, labels: Mapping[str, Any], unsure: list[str]) -> int | None:
    raw = labels.get(LABEL_COUNT)
    if raw is None:
        unsure.append(MSG_LABEL_MISSING.format(node=node, label=LABEL_COUNT))
        return None
    text = str(raw).strip()
    if not text.isdigit():
        unsure.append(MSG_LABEL_BAD.format(node=node, label=LABEL_COUNT, value=raw))
        return None
    return int(text)


def _allocatable(
    node: Mapping[str, Any], name: str, policy: str, dra: Mapping[str, int], unsure: list[str]
) -> tuple[int | None, str]:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    dp = policy == allocmode.POLICY_DEVICE_PLUGIN or (
        policy == allocmode.POLICY_UNSPECIFIED and GPU_RESOURCE in alloc
    )
    if policy == allocmode.POLICY_DRA_EXTENDED:
        unsure.append(MSG_POLICY_RESERVED.format(node=name))
        return None, "none"
    if not dp:
        return dra.get(name, 0), f"{GPU_DRIVER} ResourceSlices"
    source = f"allocatable {GPU_RESOURCE}"
    if GPU_RESOURCE not in alloc:
        return 0, source
    count = _whole(alloc[GPU_RESOURCE])
    if count is None:
        unsure.append(MSG_QUANTITY_BAD.format(node=name, resource=GPU_RESOURCE, value=alloc[GPU_RESOURCE]))
    return count, source


def _fabric(node: Mapping[str, Any], name: str, unsure: list[str]) -> tuple[tuple[str, int], ...]:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    out: list[tuple[str, int]] = []
    for key in sorted(alloc):
        if not is_fabric_resource(str(key)):
            continue
        count = _whole(alloc[key])
        if count is None:
            unsure.append(MSG_QUANTITY_BAD.format(node=name, resource=key, value=alloc[key]))
        elif count > 0:
            out.append((str(key), count))
    return tuple(out)


def node_inventory(
    node: Mapping[str, Any],
    *,
    policy: str,
    dra_devices: Mapping[str, int],
    driver_report: str | int | DriverReport | None,
) -> NodeInventory:
    """One node's counts, product and fabric; unknown facts become inconclusive lines."""
    name = allocmode.node_name(node)
    unsure: list[str] = []
    labels = _meta(node, "labels")
    advertised = _label_count(name, labels, unsure)
    product_raw = labels.get(LABEL_PRODUCT)
    product = str(product_raw).strip() if product_raw is not None and str(product_raw).strip() else None
    if product is None:
        unsure.append(MSG_LABEL_MISSING.format(node=name, label=LABEL_PRODUCT))
    allocatable, source = _allocatable(node, name, policy, dra_devices, unsure)
    driver, driver_source = _driver(name, driver_report, unsure)
    fabric = _fabric(node, name, unsure)
    return NodeInventory(
        name, source, allocatable, advertised, driver, product, fabric, tuple(unsure), driver_source
    )


def _fabric_text(fabric: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"{k}={v}" for k, v in fabric) or "none"


def odd_nodes(values: Mapping[str, str], what: str) -> list[str]:
    """One line per node whose ``value`` differs from the majority (every node when there is none)."""
    counts = Counter(values.values())
    if len(counts) <= 1:
        return []
    (top, top_n), (_, second_n) = counts.most_common(2)
    if top_n == second_n:
        return [MSG_NO_MAJORITY.format(node=n, what=what, value=v) for n, v in sorted(values.items())]
    others = plural(top_n, "other node")
    have = "has" if top_n == 1 else "have"
    return [
        MSG_ODD.format(node=n, what=what, value=v, others=others, have=have, majority=top)
        for n, v in sorted(values.items())
        if v != top
    ]


def inventory(
    nodes: Sequence[Mapping[str, Any]],
    *,
    policy: str | None,
    resource_slices: Sequence[Mapping[str, Any]] = (),
    driver_reports: Mapping[str, str | int | DriverReport],
    inconclusive: Sequence[str] = (),
) -> InventoryReport:
    """Inventory the targeted GPU ``nodes`` (the caller selects them).

    ``policy`` is the recipe's allocation policy mode (``None``/empty: unspecified; an unknown name
    is a :class:`UsageError`); ``resource_slices`` the listed ResourceSlices (any driver);
    ``driver_reports`` node name → a :class:`DriverReport`, ``nvidia-smi -L`` output or a GPU count;
    ``inconclusive``: ``node X: ...`` lines the caller already has (nodes whose GPUs are not real).
    """
    mode = allocmode.normalize_policy(policy)
    if mode not in allocmode.POLICIES:
        raise UsageError(MSG_POLICY_UNKNOWN.format(policy=mode))
    dra = allocmode.validated_driver_nodes(nodes, resource_slices, GPU_DRIVER)
    facts = tuple(
        sorted(
            (
                node_inventory(
                    n,
                    policy=mode,
                    dra_devices=dra,
                    driver_report=driver_reports.get(allocmode.node_name(n)),
                )
                for n in nodes
            ),
            key=lambda f: f.node,
        )
    )
    failures: list[str] = []
    unsure: list[str] = [*inconclusive, *(line for f in facts for line in f.inconclusive)]
    if not facts:
        unsure.append(MSG_NO_NODES)
    for f in facts:
        if f.advertised is None:
            continue
        if f.allocatable is not None and f.allocatable != f.advertised:
            tmpl = MSG_ALLOC_SHORT if f.allocatable < f.advertised else MSG_ALLOC_EXTRA
            failures.append(tmpl.format(node=f.node, alloc=f.allocatable, count=f.advertised))
        if f.driver is not None and f.driver != f.advertised:
            alloc = "?" if f.allocatable is None else f.allocatable
            failures.append(
                MSG_DRIVER_DIFFERS.format(node=f.node, driver=f.driver, alloc=alloc, count=f.advertised)
            )
    failures += odd_nodes({f.node: f.product for f in facts if f.product is not None}, "product")
    failures += odd_nodes(
        {f.node: plural(f.advertised, "GPU") for f in facts if f.advertised is not None}, "GPU count"
    )
    failures += odd_nodes({f.node: _fabric_text(f.fabric) for f in facts}, "fabric")
    extra = {
        "policy": mode,
        "nodes": [f.as_extra() for f in facts],
        "verdicts": node_verdicts([f.node for f in facts], failures, unsure),
    }
    return InventoryReport(facts, tuple(failures), tuple(unsure), extra)


def node_verdicts(nodes: Sequence[str], failures: Sequence[str], unsure: Sequence[str]) -> dict[str, Any]:
    """Per node: ``fail`` (a failure line names it), ``other`` (an inconclusive line does) or
    ``pass``, with the first line that named it (``node X:`` lines only), for ``--label-bad-nodes``."""
    out: dict[str, Any] = {}
    for node in nodes:
        prefix = f"node {node}:"
        failed = [line for line in failures if line.startswith(prefix)]
        unsure_lines = [line for line in unsure if line.startswith(prefix)]
        if failed:
            out[node] = {"result": "fail", "detail": failed[0][len(prefix) :].strip()}
        elif unsure_lines:
            out[node] = {"result": "other", "detail": unsure_lines[0][len(prefix) :].strip()}
        else:
            out[node] = {"result": "pass", "detail": ""}
    return out


def check_inventory(report: InventoryReport) -> str:
    """The ``gpu-inventory`` verdict; returns the pass message or raises (see ``health.common``)."""
    first = report.nodes[0] if report.nodes else None
    passed = MSG_PASSED.format(
        nodes=plural(len(report.nodes), "node"),
        count=first.advertised if first else 0,
        product=first.product if first else "-",
        fabric=_fabric_text(first.fabric) if first else "none",
    )
    return conclude(report.failures, report.inconclusive, passed)


__all__ = [
    "FABRIC_PREFIXES",
    "FABRIC_RESOURCES",
    "DriverReport",
    "InventoryReport",
    "NodeInventory",
    "check_inventory",
    "driver_gpu_count",
    "exporter_gpu_count",
    "inventory",
    "is_fabric_resource",
    "node_inventory",
    "node_verdicts",
    "odd_nodes",
]
