"""NCCL all-reduce bandwidth checks: pure domain logic (no cluster I/O, no pytest).

Three checks share this module: ``nccl-all-reduce-bw`` (default variant), ``nccl-all-reduce-bw-net``
and ``nccl-all-reduce-bw-nvls``.  The sections below follow the order a check uses them:

1. **Variant resolution** (:func:`resolve_variant`): the check's own constraint, the
   ``nccl-benchmark-profile`` / ``nccl-benchmark-runtime-ref`` constraints, ``AICR_NCCL_FABRIC``,
   the applicability matrix and the threshold become one :class:`VariantPlan`.  It raises
   :class:`~aicr_pytest.core.errors.CheckSkip` (not applicable), :class:`NcclCheckFailure` (the recipe asks
   for something invalid: fails the check) or :class:`~aicr_pytest.core.errors.UsageError` (exit 2).
2. **Worker discovery and sizing** (:func:`select_target_nodes`, :func:`size_workers`,
   :func:`worker_scheduling`): node dicts in Kubernetes JSON shape in, a sized cohort out.
3. **Rendering** (:func:`render_benchmark`): our jinja2 runtime templates under ``runtimes/nccl``
   or the recipe's private runtime (``${VAR}`` placeholders only), plus the shared TrainJob.
4. **Log parsing** (:func:`parse_all_reduce`, :func:`parse_all_reduce_file`): a streaming,
   fail-closed reader of the launcher log; transport banners are collected in the same pass.
5. **Verdict** (:func:`verify_transport`, :func:`evaluate`): the transport rule of the variant, the
   threshold with its tolerance, and the two stdout lines the guide documents.

Deliberate differences from AICR (spec §E), each tested:

* Only rows of the ``all_reduce_perf`` results table count.  AICR's regex also matches NCCL INFO ring
  listings (``Channel 00/24 :    0   1   2 …``), so such a line printed after the table would be taken
  as the bandwidth (§A.12, §E.5).  We parse whole table rows, strictly.
* The value is the out-of-place busbw of the **largest** message size of the last table, not of the
  last regex match; a table cut short (a partial last row, or a table without its trailer that
  stops before the ``maxBytes`` the header announced) is an error instead of a smaller number.
* The comparator is honoured: ``>=`` passes at ≥ 0.9 × value, ``<=`` at ≤ 1.1 × value; ``==``, a
  bare number or any other comparator is a usage error before the benchmark (AICR ignores it, §E.3).
* ``AICR_NCCL_FABRIC`` is read for the ``-net`` check only (§E.13).
* Sizing uses a per-node GPU census: a target node with fewer allocatable GPUs than the per-worker
  sizing fails fast, naming the node (§E.14) instead of leaving a worker Pending.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Protocol

import yaml

from aicr_pytest.core import constraints as constraint_language
from aicr_pytest.core import records, templates, yamlio
from aicr_pytest.core.datatree import DataTree
from aicr_pytest.core.errors import CheckSkip, UsageError

Variant = Literal["default", "net", "nvls"]
Fabric = Literal["efa", "roce"]

# --------------------------------------------------------------------------------------------
# Names and constants
# --------------------------------------------------------------------------------------------

CHECK_DEFAULT = "nccl-all-reduce-bw"
CHECK_NET = "nccl-all-reduce-bw-net"
CHECK_NVLS = "nccl-all-reduce-bw-nvls"
#: check name (= the constraint it reads) → variant
CHECK_VARIANTS: dict[str, Variant] = {CHECK_DEFAULT: "default", CHECK_NET: "net", CHECK_NVLS: "nvls"}
VARIANT_CHECKS: dict[Variant, str] = {v: k for k, v in CHECK_VARIANTS.items()}

PROFILE_CONSTRAINT = "nccl-benchmark-profile"
RUNTIME_REF_CONSTRAINT = "nccl-benchmark-runtime-ref"
RUNTIME_CONSTRAINT = "nccl-benchmark-runtime"
FABRIC_ENV = "AICR_NCCL_FABRIC"

#: Applicability matrix (spec §A.2): variant → service → accelerators.
SUPPORTED_COMBINATIONS: dict[Variant, dict[str, frozenset[str]]] = {
    "default": {
        "eks": frozenset({"h100", "h200"}),
        "gke": frozenset({"h100"}),
        "aks": frozenset({"h100"}),
        "any": frozenset({"b200", "gb200"}),
    },
    "net": {"eks": frozenset({"gb200"})},
    "nvls": {"eks": frozenset({"gb200"}), "oke": frozenset({"gb200"})},
}
#: With ``AICR_NCCL_FABRIC=roce`` the -net check is keyed on the service only.
ROCE_NET_SERVICES = frozenset({"eks"})
#: Every ``{accelerator}/{service}`` pair some variant implements, sorted.
KNOWN_PROFILES: tuple[str, ...] = tuple(
    sorted(
        {
            f"{acc}/{svc}"
            for combos in SUPPORTED_COMBINATIONS.values()
            for svc, accs in combos.items()
            for acc in accs
        }
    )
)

#: Relative location of a private runtime inside ``--data`` (always ``runtime.yaml``).
DATA_RUNTIME_PATH = "validators/performance/testdata/{accelerator}/{service}/runtime.yaml"
#: Our templates, relative to ``runtimes/nccl`` (same layout as AICR's testdata).
TRAINJOB_TEMPLATE = "trainjob.yaml"
ROCE_CLAIM_TEMPLATE = "roce/{service}/roce-claim.yaml"

TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
NODE_JOB = "node"
LAUNCHER_JOB = "launcher"
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
RDMA_RESOURCE = "rdma/hca_shared_devices_a"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"

TEST_TYPE = "all_reduce_perf"
MIN_MESSAGE_SIZE = "1K"
MAX_MESSAGE_SIZE = "16G"
#: Max message size when EKS has no EFA devices or AKS no RDMA pool (TCP fallback).
TCP_FALLBACK_MAX_MESSAGE_SIZE = "4G"
MIN_WORKERS = 2
#: Lines of launcher log kept for the diagnostic block of a parse failure.
DIAGNOSTIC_TAIL_LINES = 100

# --- skip reasons (spec §A.4, §A.6) -----------------------------------------------------------
MSG_SKIP_NO_CONSTRAINT = "no {check} constraint in recipe"
MSG_SKIP_NO_CRITERIA = "skipped - requires Service + Accelerator"
MSG_SKIP_NOT_IMPLEMENTED = "skipped - requires Service + Accelerator to be implemented"
MSG_SKIP_PROFILE_LACKS_VARIANT = (
    "skipped - benchmark profile {profile} does not implement the {check} NCCL variant"
)
MSG_SKIP_TOO_FEW_NODES = "skipped - requires at least 2 GPU nodes for EW fabric test"

# --- profile (spec §A.4): check failures -----------------------------------------------------
MSG_PROFILE_MALFORMED = (
    'invalid nccl-benchmark-profile="{raw}": must be "{{accelerator}}/{{service}}" (e.g. "gb200/eks")'
)
MSG_PROFILE_UNKNOWN = 'unknown nccl-benchmark-profile="{raw}": available profiles: {profiles}'

# --- fabric (spec §A.6 step 3): usage error --------------------------------------------------
MSG_FABRIC_UNSUPPORTED = 'unsupported AICR_NCCL_FABRIC="{value}" (expected "efa" or "roce")'

# --- runtime ref, stage 1 (spec §A.5): usage errors, before any cluster object ---------------
MSG_DECLARE_AT_MOST_ONE = "declare at most one {name} constraint (found {count})"
MSG_REF_AND_INLINE = (
    "nccl-benchmark-runtime-ref and an inline nccl-benchmark-runtime are both set — supply one"
)
MSG_REF_AND_PROFILE = (
    "nccl-benchmark-runtime-ref and nccl-benchmark-profile are mutually exclusive — "
    "supply a runtime or borrow an embedded profile, not both"
)
MSG_REF_MALFORMED = (
    'invalid nccl-benchmark-runtime-ref="{ref}": must be "{{accelerator}}/{{service}}" (e.g. "gb200/mycloud")'
)
MSG_REF_NO_DATA = 'nccl-benchmark-runtime-ref="{ref}" is set but no --data source is available to resolve it'
MSG_REF_UNRESOLVED = (
    'failed to resolve nccl-benchmark-runtime-ref="{ref}": expected "{relpath}" in the --data tree: {cause}'
)
MSG_REF_EMPTY = 'nccl-benchmark-runtime-ref="{ref}" resolved to an empty file ("{relpath}")'
REF_CAUSE_MISSING = "no such file"
REF_CAUSE_NOT_FILE = "not a regular file"
REF_CAUSE_TOO_LARGE = "larger than {limit} KiB"
MAX_RUNTIME_BYTES = 1 << 20

# --- private runtime, stage 2 (spec §A.5): check failures ------------------------------------
MSG_RUNTIME_AND_PROFILE = (
    "nccl-benchmark-runtime (or nccl-benchmark-runtime-ref) and nccl-benchmark-profile are mutually "
    "exclusive: supply a runtime or borrow an embedded profile, not both"
)
MSG_RUNTIME_NOT_YAML = "invalid nccl-benchmark-runtime: not parseable as YAML"
MSG_RUNTIME_WRONG_KIND = (
    "invalid nccl-benchmark-runtime: must be a trainer.kubeflow.org/v1alpha1 TrainingRuntime "
    '(got apiVersion="{api}" kind="{kind}")'
)
MSG_RUNTIME_NO_NODE_JOB = (
    'invalid nccl-benchmark-runtime: must declare a "node" replicatedJob '
    "(spec.template.spec.replicatedJobs) — the NCCL worker cohort"
)
MSG_RUNTIME_NO_POD_SPEC = (
    'invalid nccl-benchmark-runtime: "node" replicatedJob must define the worker pod spec at '
    "template.spec.template.spec"
)
MSG_RUNTIME_MULTI_DOC = (
    "invalid nccl-benchmark-runtime: must be a single trainer.kubeflow.org/v1alpha1 TrainingRuntime document "
    "(found {count} documents)"
)
MSG_RUNTIME_BAD_SELECTOR = 'invalid nccl-benchmark-runtime: "node" replicatedJob has a malformed nodeSelector'
MSG_RUNTIME_RENDER = "failed to render recipe-supplied nccl-benchmark-runtime"

# --- threshold: usage errors (our comparator rule; spec §A.14 for the number) -----------------
MSG_THRESHOLD_NO_VALUE = '{check}: invalid threshold: no numeric value found in "{raw}"'
MSG_THRESHOLD_FORMAT = '{check}: invalid threshold format "{raw}" (expected e.g. ">= 300" or ">= 300 GB/s")'
MSG_THRESHOLD_BARE = (
    '{check}: constraint "{raw}" has no comparator; a bandwidth gate needs a direction — write ">= {value}" '
    '(a floor, passes at >= 90% of it) or "<= {value}" (a ceiling, passes at <= 110% of it)'
)
MSG_THRESHOLD_EQUALS = (
    '{check}: constraint "{raw}" uses "{op}", which a measured bandwidth can never meet exactly; '
    'use ">=" (a floor) or "<=" (a ceiling)'
)
MSG_THRESHOLD_COMPARATOR = (
    '{check}: constraint "{raw}" uses unsupported comparator "{op}"; NCCL bandwidth gates take ">=" '
    '(a floor, 10% tolerance) or "<=" (a ceiling, 10% tolerance)'
)

# --- nodes and scheduling (spec §A.7, §A.9) ---------------------------------------------------
MSG_NO_GPU_NODES = "no schedulable GPU nodes found"
MSG_SELECTOR_ZERO = "--node-selector {selector} matches zero of {count} GPU nodes"
MSG_NO_ACCELERATOR_MATCH = (
    'no schedulable GPU nodes match recipe accelerator "{accelerator}" (products seen: [{products}])'
)
MSG_NO_GPUS = "no GPUs found on nodes"
MSG_SHORT_NODES = (
    "GPU census: {nodes} {verb} fewer allocatable nvidia.com/gpu than the {gpus} per worker the benchmark is "
    "sized for — the worker there would stay Pending; repair the node or exclude it with --node-selector"
)
MSG_SERVICE_ANY_NEEDS_SELECTOR = (
    "self-managed clusters (service=any) require --node-selector to identify GPU nodes "
    "(e.g., --node-selector nvidia.com/gpu.present=true)"
)
MSG_GKE_MIXED_ACCELERATOR = (
    "GKE nodes have missing or mixed cloud.google.com/gke-accelerator labels — cannot derive a nodeSelector "
    "that matches the full WorkerCount cohort"
)
MSG_EKS_NO_INSTANCE_TYPE = "GPU node missing node.kubernetes.io/instance-type label"
MSG_FABRIC_NOT_UNIFORM = (
    "{resource} present on {present} of {total} target GPU nodes — cluster still converging or device plugin "
    "not fully rolled out; re-run once uniform"
)
MSG_FABRIC_COUNTS_DIFFER = (
    "{resource} counts differ across target GPU nodes ({counts}) — cluster still converging or device plugin "
    "not fully rolled out; re-run once uniform"
)
MSG_GKE_NICS = (
    "expected 8 GPU NIC networks, found {count} — cluster may not have multi-NIC networking configured"
)
MSG_NO_REPLICATED_JOBS = "replicatedJobs not found in TrainingRuntime"
MSG_NO_NODE_JOB = 'replicatedJob "node" not found in TrainingRuntime'
MSG_NO_WORKER_POD_SPEC = "worker pod spec not found in TrainingRuntime node job"

# --- parse and transport (spec §A.12, §A.13) --------------------------------------------------
MSG_NO_BANDWIDTH = "could not find bandwidth value in logs"
MSG_PARSE_FAILED = "failed to parse bandwidth from logs: {cause}"
MSG_TABLE_TRUNCATED_ROW = "results table is truncated: its last row is incomplete ({line!r})"
MSG_TABLE_TRUNCATED_SWEEP = (
    "results table is truncated: it stops at {size} bytes, before the {max_bytes}-byte maximum the benchmark "
    "header announced, and has no '# Avg bus bandwidth' trailer"
)
MSG_OUT_OF_BOUNDS = "all_reduce_perf reported {count} out-of-bounds values (data validation FAILED)"
MSG_REJECTED_ROWS = (
    "{count} row-like line(s) lack the all_reduce_perf results layout (size count type redop [root], then "
    "out-of-place and in-place time/algbw/busbw/#wrong columns)"
)
DIAGNOSTIC_LABEL = "launcher log (bandwidth parse failed)"
MSG_NET_NO_BANNER = (
    "NET variant selected but no 'NCCL INFO Using network <plugin>' banner found — the network transport "
    "plugin did not initialize (check NCCL_NET_PLUGIN and that the provider plugin .so is on LD_LIBRARY_PATH)"
)
MSG_NET_SOCKET = (
    "NET variant selected but NCCL fell back to 'Using network Socket' — provider plugin "
    "(e.g. AWS Libfabric) did not load"
)
MSG_NVLS_NOT_AVAILABLE = (
    "NVLS variant selected but 'NVLS multicast support is available' banner not found in NCCL logs — "
    "MNNVL did not initialize (check DRA IMEX channel claim and NCCL_NVLS_ENABLE=1)"
)
MSG_NVLS_NO_COMM = (
    "NVLS variant selected but no 'NVLS comm 0x<addr>' init line found in NCCL logs — NVLS was available "
    "but NCCL did not build an NVLS communicator (check for 'NVLS_NCHANNELS' > 0 and no NVLS-disabling env "
    "overrides)"
)

# --- verdict (spec §A.14, guide) ---------------------------------------------------------------
MSG_BANDWIDTH_LINE = "NCCL All Reduce bandwidth ({check}): {bandwidth:.2f} GB/s"
MSG_CONSTRAINT_LINE = "Constraint: {constraint} → {verdict}"
MSG_NOT_SATISFIED = 'NCCL bandwidth {bandwidth:.2f} GB/s does not satisfy constraint "{constraint}"'


class NcclCheckFailure(AssertionError):
    """The check fails (CTRF ``failed``) with ``str(exc)`` as its message."""


class NcclParseError(NcclCheckFailure):
    """No usable bandwidth in the launcher log.

    ``str(exc)`` is ``failed to parse bandwidth from logs: <cause>``; ``tail`` holds the last
    :data:`DIAGNOSTIC_TAIL_LINES` lines of the log for the report's diagnostic block.
    """

    def __init__(
        self,
        cause: str,
        *,
        tail: Sequence[str] = (),
        transport: TransportInfo | None = None,
        avg_busbw_gbps: float | None = None,
        rows: Sequence[SweepRow] = (),
    ) -> None:
        super().__init__(MSG_PARSE_FAILED.format(cause=cause))
        self.cause = cause
        self.tail = tuple(tail)
        self.transport = transport if transport is not None else TransportInfo()
        self.avg_busbw_gbps = avg_busbw_gbps
        self.rows = tuple(rows)

    def diagnostic_block(self) -> list[str]:
        """The tail as report lines: a header, the lines (``(empty)`` when there were none)."""
        body = list(self.tail) or ["(empty)"]
        return [f"--- {DIAGNOSTIC_LABEL}: last {len(self.tail)} lines ---", *body]


class TransportError(NcclCheckFailure):
    """The variant's transport did not carry the traffic (spec §A.13)."""


# --------------------------------------------------------------------------------------------
# 1. Variant resolution
# --------------------------------------------------------------------------------------------


class HasNameValue(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str: ...


class HasCriteria(Protocol):
    @property
    def service(self) -> str | None: ...
    @property
    def accelerator(self) -> str | None: ...


ConstraintsArg = Mapping[str, str] | Iterable[tuple[str, str]] | Iterable[HasNameValue]


@dataclass(frozen=True)
class Criteria:
    """``criteria.service`` / ``criteria.accelerator`` of the recipe (any object with both works)."""

    service: str | None
    accelerator: str | None


def constraint_pairs(constraints: ConstraintsArg) -> list[tuple[str, str]]:
    """Normalise constraints (a mapping, ``(name, value)`` pairs or recipe ``Constraint`` objects)."""
    if isinstance(constraints, Mapping):
        return [(str(k), "" if v is None else str(v)) for k, v in constraints.items()]
    out: list[tuple[str, str]] = []
    for item in constraints:
        if isinstance(item, tuple):
            name, value = item
        else:
            name, value = item.name, item.value
        out.append((str(name), "" if value is None else str(value)))
    return out


def _first(pairs: Sequence[tuple[str, str]], name: str) -> str | None:
    """AICR ``findPerformanceConstraint``: the first entry with that exact name."""
    return next((v for n, v in pairs if n == name), None)


@dataclass(frozen=True)
class Threshold:
    """A parsed bandwidth constraint: ``>=`` floor or ``<=`` ceiling, 10 % tolerance either way."""

    raw: str
    comparator: Literal[">=", "<="]
    value: float

    @property
    def effective(self) -> float:
        """The bound actually compared: 0.9 × value for ``>=``, 1.1 × value for ``<=``."""
        factor = (
            constraint_language.TOLERANCE_LOW
            if self.comparator == ">="
            else constraint_language.TOLERANCE_HIGH
        )
        return self.value * factor

    def passes(self, measured_gbps: float) -> bool:
        if not math.isfinite(measured_gbps):
            return False
        return constraint_language.threshold_passes(self.comparator, self.value, measured_gbps)


_THRESHOLD_RE = re.compile(r"^(?P<op>[<>=!]*)\s*(?P<num>[^\s]*)\s*(?P<unit>.*?)\s*$")
_NUMBER_RE = re.compile(r"^[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


def parse_threshold(check: str, raw: str) -> Threshold:
    """Parse ``">= 300"`` (optionally ``GB/s``).  Anything but ``>=``/``<=`` is a :class:`UsageError`."""
    text = (raw or "").strip()
    m = _THRESHOLD_RE.match(text)
    op = m.group("op") if m else ""
    num = m.group("num") if m else ""
    unit = m.group("unit") if m else ""
    if not num:
        raise UsageError(MSG_THRESHOLD_NO_VALUE.format(check=check, raw=raw))
    if num.lower().endswith("gb/s") and not unit:
        num, unit = num[:-4], num[-4:]
    if not _NUMBER_RE.match(num) or (unit and unit.lower() != "gb/s"):
        raise UsageError(MSG_THRESHOLD_FORMAT.format(check=check, raw=raw))
    value = float(num)
    shown = num
    if op == "":
        raise UsageError(MSG_THRESHOLD_BARE.format(check=check, raw=raw, value=shown))
    if op in ("==", "="):
        raise UsageError(MSG_THRESHOLD_EQUALS.format(check=check, raw=raw, op=op))
    if op not in (">=", "<="):
        raise UsageError(MSG_THRESHOLD_COMPARATOR.format(check=check, raw=raw, op=op))
    return Threshold(raw=text, comparator=op, value=value)  # type: ignore[arg-type]


def parse_profile(raw: str | None) -> tuple[str, str] | None:
    """``nccl-benchmark-profile``: ``(accelerator, service)``, ``None`` when absent/blank."""
    if raw is None or not raw.strip():
        return None
    parts = raw.split("/")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise NcclCheckFailure(MSG_PROFILE_MALFORMED.format(raw=raw))
    acc, svc = (p.strip().lower() for p in parts)
    if f"{acc}/{svc}" not in KNOWN_PROFILES:
        raise NcclCheckFailure(MSG_PROFILE_UNKNOWN.format(raw=raw, profiles=", ".join(KNOWN_PROFILES)))
    return acc, svc


def parse_fabric(env: Mapping[str, str]) -> Fabric:
    """``AICR_NCCL_FABRIC``: unset/``efa`` → efa, ``roce`` → roce (trimmed, case-insensitive)."""
    raw = env.get(FABRIC_ENV)
    value = (raw or "").strip().lower()
    if value in ("", "efa"):
        return "efa"
    if value == "roce":
        return "roce"
    raise UsageError(MSG_FABRIC_UNSUPPORTED.format(value=raw))


def combination_supported(variant: Variant, fabric: Fabric, accelerator: str, service: str) -> bool:
    """The applicability matrix (spec §A.2), with the RoCE override for -net."""
    if variant == "net" and fabric == "roce":
        return service in ROCE_NET_SERVICES
    return accelerator in SUPPORTED_COMBINATIONS[variant].get(service, frozenset())


def template_path(variant: Variant, fabric: Fabric, accelerator: str, service: str) -> str:
    """Runtime template relative to ``runtimes/nccl`` (AICR ``templatePath``, fabric scoped to -net)."""
    suffix = "" if variant == "default" else f"-{variant}"
    if variant == "net" and fabric == "roce":
        return f"roce/{service}/runtime-net.yaml"
    return f"{accelerator}/{service}/runtime{suffix}.yaml"


@dataclass(frozen=True)
class PrivateRuntime:
    """A recipe-supplied TrainingRuntime (``nccl-benchmark-runtime-ref`` or inline carrier)."""

    text: str
    source: str  #: ``--data`` relative path, or ``inline`` for an inline ``nccl-benchmark-runtime``
    ref: str | None = None
    node_selector: Mapping[str, str] | None = None


@dataclass(frozen=True)
class VariantPlan:
    """Everything the check needs to run one NCCL variant, decided before touching the cluster."""

    check: str
    variant: Variant
    threshold: Threshold
    criteria_accelerator: str  #: keys GPU node identification (GFD product), always the recipe's own
    criteria_service: str
    target_accelerator: str  #: profile or criteria: keys template, plumbing, preflights
    target_service: str
    profile: str | None = None
    fabric: Fabric = "efa"
    runtime_template: str | None = None  #: relative to runtimes/nccl; None for a private runtime
    claim_template: str | None = None  #: the RoCE ResourceClaimTemplate, -net with fabric roce only
    private_runtime: PrivateRuntime | None = None

    @property
    def embedded(self) -> bool:
        return self.private_runtime is None

    @property
    def service_steps(self) -> bool:
        """EFA/GKE/AKS discovery, preflights, NVLS provisioning, platform scheduling defaults."""
        return self.embedded

    @property
    def requires_node_selector(self) -> bool:
        return self.embedded and self.target_service == "any"

    @property
    def narrows_instance_type(self) -> bool:
        return self.embedded and self.target_service == "eks"

    @property
    def provisions_compute_domain(self) -> bool:
        return self.embedded and self.variant == "nvls"

    @property
    def preflight(self) -> Literal["nvreg", "tcpxo"] | None:
        """NVreg GrdmaPciTopoCheckOverride (gb200/eks -net over EFA) or TCPXO (h100/gke default)."""
        if not self.embedded:
            return None
        target = (self.target_accelerator, self.target_service)
        if self.variant == "net" and self.fabric == "efa" and target == ("gb200", "eks"):
            return "nvreg"
        if self.variant == "default" and target == ("h100", "gke"):
            return "tcpxo"
        return None

    def sizing_selector(self, node_selector: Mapping[str, str] | None) -> dict[str, str] | None:
        """The selector that replaces automatic node filters: ``--node-selector``, else (private
        runtime only) the runtime's own worker ``nodeSelector``."""
        if node_selector:
            return dict(node_selector)
        if self.private_runtime is not None and self.private_runtime.node_selector:
            return dict(self.private_runtime.node_selector)
        return None


def _ref_relpath(ref: str) -> str:
    parts = ref.split("/")
    if len(parts) != 2:
        raise UsageError(MSG_REF_MALFORMED.format(ref=ref))
    segs = [p.strip() for p in parts]
    for seg in segs:
        if not seg or seg in (".", "..") or "\\" in seg or "\x00" in seg:
            raise UsageError(MSG_REF_MALFORMED.format(ref=ref))
    return DATA_RUNTIME_PATH.format(accelerator=segs[0], service=segs[1])


def resolve_runtime_ref(constraints: ConstraintsArg, data: DataTree | None) -> PrivateRuntime | None:
    """Stage 1 of ``nccl-benchmark-runtime-ref`` (spec §A.5): run once before any cluster object.

    Returns the private runtime (from the ref or an inline ``nccl-benchmark-runtime``) or ``None``.
    Every problem is a :class:`UsageError` (exit 2).  The file must stay inside ``--data``:
    ``..`` segments, absolute paths and symlinks leaving the directory are refused.
    """
    pairs = constraint_pairs(constraints)
    for name in (RUNTIME_REF_CONSTRAINT, RUNTIME_CONSTRAINT):
        count = sum(1 for n, _ in pairs if n == name)
        if count > 1:
            raise UsageError(MSG_DECLARE_AT_MOST_ONE.format(name=name, count=count))
    ref = (_first(pairs, RUNTIME_REF_CONSTRAINT) or "").strip()
    inline = _first(pairs, RUNTIME_CONSTRAINT) or ""
    if not ref:
        if inline.strip():
            return _private_runtime(inline, source="inline", ref=None)
        return None
    if inline.strip():
        raise UsageError(MSG_REF_AND_INLINE)
    if (_first(pairs, PROFILE_CONSTRAINT) or "").strip():
        raise UsageError(MSG_REF_AND_PROFILE)
    relpath = _ref_relpath(ref)
    if data is None or data.external_root is None:
        raise UsageError(MSG_REF_NO_DATA.format(ref=ref))
    text = _read_data_runtime(data, ref, relpath)
    if not text.strip():
        raise UsageError(MSG_REF_EMPTY.format(ref=ref, relpath=relpath))
    return _private_runtime(text, source=relpath, ref=ref)


def _read_data_runtime(data: DataTree, ref: str, relpath: str) -> str:
    def fail(cause: str) -> UsageError:
        return UsageError(MSG_REF_UNRESOLVED.format(ref=ref, relpath=relpath, cause=cause))

    try:
        path = data.resolve_external(relpath)
    except UsageError as exc:  # escapes the --data directory
        raise fail(str(exc)) from None
    if path is None:
        raise fail(REF_CAUSE_MISSING)
    if not path.is_file():
        raise fail(REF_CAUSE_NOT_FILE)
    try:
        with path.open("rb") as fh:
            body = fh.read(MAX_RUNTIME_BYTES + 1)
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from None
    if len(body) > MAX_RUNTIME_BYTES:
        raise fail(REF_CAUSE_TOO_LARGE.format(limit=MAX_RUNTIME_BYTES >> 10))
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise fail("not UTF-8 text") from None


def _private_runtime(text: str, *, source: str, ref: str | None) -> PrivateRuntime:
    # The nodeSelector is read leniently here; validate_private_runtime reports shape errors.
    selector: dict[str, str] | None = None
    try:
        doc = yamlio.load(text)
        pod = _node_pod_spec(doc) if isinstance(doc, dict) else None
        raw_sel = pod.get("nodeSelector") if isinstance(pod, dict) else None
        if isinstance(raw_sel, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw_sel.items()
        ):
            selector = dict(raw_sel) or None
    except yaml.YAMLError:
        selector = None
    return PrivateRuntime(text=text, source=source, ref=ref, node_selector=selector)


def _node_pod_spec(runtime: Mapping[str, Any]) -> dict[str, Any] | None:
    jobs = _dig(runtime, "spec", "template", "spec", "replicatedJobs")
    if not isinstance(jobs, list):
        return None
    for job in jobs:
        if isinstance(job, dict) and job.get("name") == NODE_JOB:
            pod = _dig(job, "template", "spec", "template", "spec")
            return pod if isinstance(pod, dict) else None
    return None


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def validate_private_runtime(text: str) -> dict[str, Any]:
    """Stage 2 shape rules on the raw text: raises :class:`NcclCheckFailure` (fails, never skips)."""
    try:
        docs = [d for d in yamlio.load_all(text) if d is not None]
    except yaml.YAMLError:
        raise NcclCheckFailure(MSG_RUNTIME_NOT_YAML) from None
    if len(docs) > 1:
        raise NcclCheckFailure(MSG_RUNTIME_MULTI_DOC.format(count=len(docs)))
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise NcclCheckFailure(MSG_RUNTIME_NOT_YAML)
    doc: dict[str, Any] = docs[0]
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if api != TRAINER_API_VERSION or kind != "TrainingRuntime":
        raise NcclCheckFailure(
            MSG_RUNTIME_WRONG_KIND.format(api="" if api is None else api, kind="" if kind is None else kind)
        )
    jobs = _dig(doc, "spec", "template", "spec", "replicatedJobs")
    node_job = None
    if isinstance(jobs, list):
        node_job = next((j for j in jobs if isinstance(j, dict) and j.get("name") == NODE_JOB), None)
    if node_job is None:
        raise NcclCheckFailure(MSG_RUNTIME_NO_NODE_JOB)
    pod = _dig(node_job, "template", "spec", "template", "spec")
    if not isinstance(pod, dict):
        raise NcclCheckFailure(MSG_RUNTIME_NO_POD_SPEC)
    sel = pod.get("nodeSelector")
    if sel is not None and not (
        isinstance(sel, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in sel.items())
    ):
        raise NcclCheckFailure(MSG_RUNTIME_BAD_SELECTOR)
    return doc


def _criteria_values(criteria: HasCriteria | Mapping[str, Any] | None) -> tuple[str, str] | None:
    if criteria is None:
        return None
    if isinstance(criteria, Mapping):
        svc, acc = criteria.get("service"), criteria.get("accelerator")
    else:
        svc, acc = criteria.service, criteria.accelerator
    svc_s = str(svc or "").strip().lower()
    acc_s = str(acc or "").strip().lower()
    if not svc_s or not acc_s:
        return None
    return svc_s, acc_s


def resolve_variant(
    check_name: str,
    criteria: HasCriteria | Mapping[str, Any] | None,
    constraints: ConstraintsArg,
    env: Mapping[str, str],
    *,
    data: DataTree | None = None,
    private_runtime: PrivateRuntime | None = None,
) -> VariantPlan:
    """Decide how (and whether) ``check_name`` runs: the ordered flow of spec §A.6.

    ``private_runtime`` is the result of :func:`resolve_runtime_ref` when the caller already ran
    stage 1 at session start; otherwise stage 1 runs here against ``data``.

    Raises :class:`CheckSkip` (constraint absent, no criteria, not applicable, profile lacks the
    variant), :class:`NcclCheckFailure` (malformed/unknown profile, invalid private runtime) or
    :class:`UsageError` (runtime-ref resolution, ``AICR_NCCL_FABRIC``, threshold comparator).
    """
    if check_name not in CHECK_VARIANTS:
        raise UsageError(f"unknown NCCL check {check_name!r} (expected one of {', '.join(CHECK_VARIANTS)})")
    variant = CHECK_VARIANTS[check_name]
    pairs = constraint_pairs(constraints)
    if private_runtime is None:
        private_runtime = resolve_runtime_ref(pairs, data)

    raw_threshold = _first(pairs, check_name)
    if raw_threshold is None:
        raise CheckSkip(MSG_SKIP_NO_CONSTRAINT.format(check=check_name))
    crit = _criteria_values(criteria)
    if crit is None:
        raise CheckSkip(MSG_SKIP_NO_CRITERIA)
    service, accelerator = crit

    profile = parse_profile(_first(pairs, PROFILE_CONSTRAINT))

    if private_runtime is not None:
        if profile is not None:
            raise NcclCheckFailure(MSG_RUNTIME_AND_PROFILE)
        validate_private_runtime(private_runtime.text)
        return VariantPlan(
            check=check_name,
            variant=variant,
            threshold=parse_threshold(check_name, raw_threshold),
            criteria_accelerator=accelerator,
            criteria_service=service,
            target_accelerator=accelerator,
            target_service=service,
            private_runtime=private_runtime,
        )

    fabric: Fabric = parse_fabric(env) if variant == "net" else "efa"
    target_acc, target_svc = profile if profile is not None else (accelerator, service)
    if not combination_supported(variant, fabric, target_acc, target_svc):
        if profile is not None:
            raise CheckSkip(
                MSG_SKIP_PROFILE_LACKS_VARIANT.format(profile=f"{target_acc}/{target_svc}", check=check_name)
            )
        raise CheckSkip(MSG_SKIP_NOT_IMPLEMENTED)
    threshold = parse_threshold(check_name, raw_threshold)
    claim = ROCE_CLAIM_TEMPLATE.format(service=target_svc) if variant == "net" and fabric == "roce" else None
    return VariantPlan(
        check=check_name,
        variant=variant,
        threshold=threshold,
        criteria_accelerator=accelerator,
        criteria_service=service,
        target_accelerator=target_acc,
        target_service=target_svc,
        profile=f"{target_acc}/{target_svc}" if profile is not None else None,
        fabric=fabric,
        runtime_template=template_path(variant, fabric, target_acc, target_svc),
        claim_template=claim,
    )


class HasPerformanceBlock(Protocol):
    """What :func:`prevalidate` reads from a recipe (:class:`aicr_pytest.core.recipe.Recipe` fits)."""

    @property
    def criteria(self) -> Any: ...
    def phase_checks(self, phase: str) -> list[str]: ...
    def phase_constraints(self, phase: str) -> Sequence[HasNameValue]: ...


def prevalidate(recipe: HasPerformanceBlock, settings: object, data: DataTree | None) -> None:
    """Session-start validation of the NCCL inputs only the checks understand (exit 2, nothing created).

    Runs :func:`resolve_runtime_ref` once (malformed ref, missing ``--data``, missing/escaping
    file), then the same :func:`resolve_variant` each declared NCCL check runs, so an unsupported
    ``AICR_NCCL_FABRIC`` for ``-net`` or a ``==``/bare/unknown comparator is a
    :class:`UsageError` here rather than after node discovery.  Outcomes that are the check's own
    business (skips, invalid profile or private runtime: the check fails) are left to the check.
    ``settings`` is accepted for the prevalidator signature; the environment is read from
    ``os.environ`` as the check does.
    """
    constraints = constraint_pairs(recipe.phase_constraints("performance"))
    private = resolve_runtime_ref(constraints, data)
    for check in recipe.phase_checks("performance"):
        if check not in CHECK_VARIANTS:
            continue
        try:
            resolve_variant(
                check, recipe.criteria, constraints, os.environ, data=data, private_runtime=private
            )
        except (CheckSkip, NcclCheckFailure):
            continue


# --------------------------------------------------------------------------------------------
# 2. Worker discovery, sizing and scheduling
# --------------------------------------------------------------------------------------------

Node = Mapping[str, Any]

#: GFD ``nvidia.com/gpu.product`` matchers: exact values or prefixes (spec §A.7 step 3).
_PRODUCT_EXACT: dict[str, tuple[str, ...]] = {
    "gb200": ("NVIDIA-GB200",),
    "b200": ("NVIDIA-B200",),
    "l40": ("NVIDIA-L40", "NVIDIA-L40S"),
    "rtx-pro-6000": ("NVIDIA-RTX-PRO-6000",),
}
_PRODUCT_PREFIX: dict[str, str] = {"h100": "NVIDIA-H100-", "h200": "NVIDIA-H200-", "a100": "NVIDIA-A100-"}


def node_name(node: Node) -> str:
    return str(_dig(node, "metadata", "name") or "")


def node_labels(node: Node) -> dict[str, str]:
    labels = _dig(node, "metadata", "labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def allocatable_count(node: Node, resource: str) -> int:
    """Scalar allocatable of ``resource`` (non-integer quantities count as 0)."""
    alloc = _dig(node, "status", "allocatable")
    value = alloc.get(resource) if isinstance(alloc, dict) else None
    if value is None:
        return 0
    try:
        return max(int(str(value).strip()), 0)
    except ValueError:
        return 0


def product_matches(accelerator: str, product: str) -> bool | None:
    """Whether a GFD product belongs to ``accelerator``; ``None`` when no matcher exists."""
    acc = accelerator.strip().lower()
    if acc in _PRODUCT_EXACT:
        return product in _PRODUCT_EXACT[acc]
    if acc in _PRODUCT_PREFIX:
        return product.startswith(_PRODUCT_PREFIX[acc])
    return None


def _format_selector(selector: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def select_target_nodes(
    nodes: Iterable[Node],
    *,
    accelerator: str,
    service: str,
    node_selector: Mapping[str, str] | None = None,
) -> list[Node]:
    """The benchmark's worker nodes (spec §A.7 steps 1–4).

    ``accelerator`` is the recipe's own ``criteria.accelerator``; ``service`` the target (profile)
    service.  A non-empty ``node_selector`` (``--node-selector``, or a private runtime's own worker
    selector) *replaces* the accelerator and instance-type filters.
    """
    candidates = [
        n
        for n in nodes
        if not bool(_dig(n, "spec", "unschedulable")) and allocatable_count(n, GPU_RESOURCE) > 0
    ]
    if not candidates:
        raise NcclCheckFailure(MSG_NO_GPU_NODES)
    if node_selector:
        chosen = [n for n in candidates if all(node_labels(n).get(k) == v for k, v in node_selector.items())]
        if not chosen:
            raise NcclCheckFailure(
                MSG_SELECTOR_ZERO.format(selector=_format_selector(node_selector), count=len(candidates))
            )
        return chosen
    products = [node_labels(n).get(GPU_PRODUCT_LABEL) for n in candidates]
    if product_matches(accelerator, "") is not None and any(products):
        chosen = [
            n for n, p in zip(candidates, products, strict=True) if p and product_matches(accelerator, p)
        ]
        if not chosen:
            seen = " ".join(sorted({p for p in products if p}))
            raise NcclCheckFailure(MSG_NO_ACCELERATOR_MATCH.format(accelerator=accelerator, products=seen))
        candidates = chosen
    if service == "eks":
        first_type = node_labels(candidates[0]).get(INSTANCE_TYPE_LABEL)
        if first_type:
            candidates = [n for n in candidates if node_labels(n).get(INSTANCE_TYPE_LABEL) == first_type]
    return candidates


@dataclass(frozen=True)
class WorkerSizing:
    worker_count: int
    gpu_count_per_node: int
    node_names: tuple[str, ...]

    @property
    def gpu_count(self) -> int:
        return self.worker_count * self.gpu_count_per_node


def size_workers(targets: Sequence[Node]) -> WorkerSizing:
    """Worker count and GPUs per worker, with a per-node census.

    Fewer than two nodes skips; every node must offer the per-worker GPU count (the largest
    allocatable count among the targets), else the check fails naming the short nodes.
    """
    if len(targets) < MIN_WORKERS:
        raise CheckSkip(MSG_SKIP_TOO_FEW_NODES)
    counts = [(node_name(n), allocatable_count(n, GPU_RESOURCE)) for n in targets]
    per_node = max(c for _, c in counts)
    if per_node <= 0:
        raise NcclCheckFailure(MSG_NO_GPUS)
    short = [(name, c) for name, c in counts if c < per_node]
    if short:
        listed = ", ".join(f"{name} ({c} of {per_node})" for name, c in short)
        raise NcclCheckFailure(
            MSG_SHORT_NODES.format(nodes=listed, verb="has" if len(short) == 1 else "have", gpus=per_node)
        )
    return WorkerSizing(
        worker_count=len(targets), gpu_count_per_node=per_node, node_names=tuple(n for n, _ in counts)
    )


def uniform_fabric_count(targets: Sequence[Node], resource: str) -> int:
    """The per-node count of ``resource`` (EFA, RDMA pool) which must match on every target node.

    A uniform 0 is valid (TCP fallback: see :func:`max_message_size`).
    """
    counts = [allocatable_count(n, resource) for n in targets]
    if not counts or len(set(counts)) == 1:
        return counts[0] if counts else 0
    present = sum(1 for c in counts if c > 0)
    if present < len(counts):
        raise NcclCheckFailure(
            MSG_FABRIC_NOT_UNIFORM.format(resource=resource, present=present, total=len(counts))
        )
    detail = ", ".join(f"{node_name(n)}={c}" for n, c in zip(targets, counts, strict=True))
    raise NcclCheckFailure(MSG_FABRIC_COUNTS_DIFFER.format(resource=resource, counts=detail))


def max_message_size(plan: VariantPlan, fabric_count: int | None) -> str:
    """16G normally; 4G on EKS without EFA / AKS without the RDMA pool (TCP fallback)."""
    if plan.embedded and plan.target_service in ("eks", "aks") and plan.fabric == "efa" and fabric_count == 0:
        return TCP_FALLBACK_MAX_MESSAGE_SIZE
    return MAX_MESSAGE_SIZE


@dataclass(frozen=True)
class WorkerScheduling:
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]


_TOLERATE_ALL: list[dict[str, str]] = [{"operator": "Exists"}]


def platform_worker_scheduling(service: str, targets: Sequence[Node]) -> WorkerScheduling:
    """Default worker nodeSelector/tolerations for the target service (spec §A.9)."""
    if service == "eks":
        itype = node_labels(targets[0]).get(INSTANCE_TYPE_LABEL) if targets else None
        if not itype:
            raise NcclCheckFailure(MSG_EKS_NO_INSTANCE_TYPE)
        return WorkerScheduling({INSTANCE_TYPE_LABEL: itype}, list(_TOLERATE_ALL))
    if service == "gke":
        values = {node_labels(n).get(GKE_ACCELERATOR_LABEL) for n in targets}
        if len(values) != 1 or None in values or "" in values:
            raise NcclCheckFailure(MSG_GKE_MIXED_ACCELERATOR)
        (value,) = values
        assert value is not None
        return WorkerScheduling(
            {GKE_ACCELERATOR_LABEL: value},
            [
                {"operator": "Exists"},
                {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
            ],
        )
    if service in ("oke", "aks"):
        products = {node_labels(n).get(GPU_PRODUCT_LABEL) for n in targets}
        selector: dict[str, str] = {}
        if len(products) == 1:
            (product,) = products
            if product:
                selector = {GPU_PRODUCT_LABEL: product}
        return WorkerScheduling(selector, list(_TOLERATE_ALL))
    return WorkerScheduling({}, [])


def worker_scheduling(
    plan: VariantPlan,
    targets: Sequence[Node],
    *,
    node_selector: Mapping[str, str] | None,
    tolerations: Sequence[Mapping[str, str]] | None,
) -> WorkerScheduling:
    """Effective worker scheduling: flags win over platform defaults (tolerations: ``None`` = no
    flag given).  A private runtime gets only what the flags say; ``service=any`` needs a selector."""
    explicit_sel = dict(node_selector) if node_selector else {}
    explicit_tol = [dict(t) for t in tolerations] if tolerations is not None else None
    if not plan.embedded:
        return WorkerScheduling(explicit_sel, explicit_tol or [])
    if plan.requires_node_selector and not explicit_sel:
        raise NcclCheckFailure(MSG_SERVICE_ANY_NEEDS_SELECTOR)
    default = platform_worker_scheduling(plan.target_service, targets)
    return WorkerScheduling(
        explicit_sel or default.node_selector,
        explicit_tol if explicit_tol is not None else default.tolerations,
    )


def gke_network_interfaces(network_names: Iterable[str]) -> str:
    """``networking.gke.io/interfaces`` JSON from the cluster's GKE Network names (sorted ``gpu-nic``)."""
    nics = sorted(n for n in network_names if "gpu-nic" in n)
    if len(nics) < 8:
        raise NcclCheckFailure(MSG_GKE_NICS.format(count=len(nics)))
    ifaces = [{"interfaceName": "eth0", "network": "default"}]
    ifaces += [{"interfaceName": f"eth{i + 1}", "network": n} for i, n in enumerate(nics)]
    return json.dumps(ifaces, separators=(",", ":"))


_NVREG_RE = re.compile(r"^GrdmaPciTopoCheckOverride: 1$", re.MULTILINE)


def nvreg_override_set(params_text: str) -> bool:
    """``/proc/driver/nvidia/params`` has exactly ``GrdmaPciTopoCheckOverride: 1`` on a line."""
    return _NVREG_RE.search(params_text) is not None


# --------------------------------------------------------------------------------------------
# 3. Rendering
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkNames:
    """Run-scoped object names (AICR's fixed names collide across concurrent runs)."""

    trainjob: str
    runtime: str
    compute_domain: str
    imex_claim_template: str
    roce_claim_template: str


def benchmark_names(run_id: str, check: str, worker: str | None = None) -> BenchmarkNames:
    """Short, DNS-safe names unique per (run id, xdist worker, check).

    The TrainJob name prefixes pod hostnames (``<tj>-node-0-0``), which must stay under 63 chars.
    """
    variant = CHECK_VARIANTS.get(check, "default")
    short = {"default": "bw", "net": "net", "nvls": "nvls"}[variant]
    digest = hashlib.sha256(f"{run_id}\x00{worker or ''}\x00{check}".encode()).hexdigest()[:10]
    return BenchmarkNames(
        trainjob=f"nccl-{short}-{digest}",
        runtime=f"nccl-{short}-rt-{digest}",
        compute_domain=f"nccl-{short}-cd-{digest}",
        imex_claim_template=f"nccl-{short}-imex-{digest}",
        roce_claim_template=f"nccl-{short}-roce-{digest}",
    )


@dataclass(frozen=True)
class RenderInputs:
    namespace: str
    names: BenchmarkNames
    sizing: WorkerSizing
    labels: Mapping[str, str] = field(default_factory=dict)
    max_message_size: str = MAX_MESSAGE_SIZE
    efa_count: int = 0
    rdma_count: int = 0
    gke_network_interfaces: str | None = None  #: JSON from :func:`gke_network_interfaces` (gke only)

    def placeholders(self) -> dict[str, str]:
        """The generic ``${VAR}`` values (the only ones a private runtime gets)."""
        return {
            "NAMESPACE": self.namespace,
            "WORKER_COUNT": str(self.sizing.worker_count),
            "GPU_COUNT_PER_NODE": str(self.sizing.gpu_count_per_node),
            "GPU_COUNT": str(self.sizing.gpu_count),
            "TEST_TYPE": TEST_TYPE,
            "MIN_MESSAGE_SIZE": MIN_MESSAGE_SIZE,
            "MAX_MESSAGE_SIZE": self.max_message_size,
        }

    def context(self) -> dict[str, Any]:
        """The jinja2 context of our templates (documented in runtimes/nccl/README.md)."""
        return {
            "namespace": self.namespace,
            "names": {
                "trainjob": self.names.trainjob,
                "runtime": self.names.runtime,
                "imex_claim_template": self.names.imex_claim_template,
                "roce_claim_template": self.names.roce_claim_template,
            },
            "labels": dict(self.labels),
            "worker_count": self.sizing.worker_count,
            "gpu_count_per_node": self.sizing.gpu_count_per_node,
            "gpu_count": self.sizing.gpu_count,
            "test_type": TEST_TYPE,
            "min_message_size": MIN_MESSAGE_SIZE,
            "max_message_size": self.max_message_size,
            "efa_count": self.efa_count,
            "rdma_count": self.rdma_count,
            "roce_device_count": self.sizing.gpu_count_per_node,
            # only when known, so the GKE template fails (StrictUndefined) instead of rendering null
            **(
                {"gke_network_interfaces": self.gke_network_interfaces}
                if self.gke_network_interfaces is not None
                else {}
            ),
        }


@dataclass
class BenchmarkObjects:
    runtime: dict[str, Any]
    trainjob: dict[str, Any]
    claim_template: dict[str, Any] | None = None


def _single_doc(docs: list[Any], what: str) -> dict[str, Any]:
    docs = [d for d in docs if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise templates.TemplateRenderError(
            f"{what}: expected exactly one YAML mapping, got {len(docs)} documents"
        )
    return docs[0]


def set_identity(obj: dict[str, Any], name: str, namespace: str, labels: Mapping[str, str]) -> None:
    """Force ``metadata.name``/``namespace`` and add our labels."""
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    meta["name"] = name
    meta["namespace"] = namespace
    if labels:
        existing = meta.get("labels")
        meta["labels"] = {**(existing if isinstance(existing, dict) else {}), **labels}


def apply_worker_scheduling(runtime: dict[str, Any], scheduling: WorkerScheduling) -> None:
    """Overwrite the ``node`` job's nodeSelector/tolerations when non-empty (AICR
    ``applyNCCLWorkerScheduling``)."""
    jobs = _dig(runtime, "spec", "template", "spec", "replicatedJobs")
    if not isinstance(jobs, list):
        raise NcclCheckFailure(MSG_NO_REPLICATED_JOBS)
    job = next((j for j in jobs if isinstance(j, dict) and j.get("name") == NODE_JOB), None)
    if job is None:
        raise NcclCheckFailure(MSG_NO_NODE_JOB)
    pod = _dig(job, "template", "spec", "template", "spec")
    if not isinstance(pod, dict):
        raise NcclCheckFailure(MSG_NO_WORKER_POD_SPEC)
    if scheduling.node_selector:
        pod["nodeSelector"] = dict(scheduling.node_selector)
    if scheduling.tolerations:
        pod["tolerations"] = [dict(t) for t in scheduling.tolerations]


def render_benchmark(
    plan: VariantPlan,
    inputs: RenderInputs,
    scheduling: WorkerScheduling,
    *,
    runtimes_root: Path | None = None,
) -> BenchmarkObjects:
    """Render the TrainingRuntime (+ RoCE claim template) and the shared TrainJob for ``plan``."""
    ctx = inputs.context()
    placeholders = inputs.placeholders()
    if plan.private_runtime is not None:
        text = templates.substitute_placeholders(plan.private_runtime.text, placeholders)
        try:
            runtime = _single_doc(list(yamlio.load_all(text)), MSG_RUNTIME_RENDER)
        except (yaml.YAMLError, templates.TemplateRenderError):
            raise NcclCheckFailure(MSG_RUNTIME_RENDER) from None
    else:
        assert plan.runtime_template is not None
        runtime = _single_doc(
            templates.render(
                f"nccl/{plan.runtime_template}", ctx, root=runtimes_root, placeholders=placeholders
            ),
            plan.runtime_template,
        )
    set_identity(runtime, inputs.names.runtime, inputs.namespace, inputs.labels)
    apply_worker_scheduling(runtime, scheduling)
    trainjob = _single_doc(
        templates.render(f"nccl/{TRAINJOB_TEMPLATE}", ctx, root=runtimes_root, placeholders=placeholders),
        TRAINJOB_TEMPLATE,
    )
    set_identity(trainjob, inputs.names.trainjob, inputs.namespace, inputs.labels)
    claim = None
    if plan.claim_template is not None:
        claim = _single_doc(
            templates.render(
                f"nccl/{plan.claim_template}", ctx, root=runtimes_root, placeholders=placeholders
            ),
            plan.claim_template,
        )
        set_identity(claim, inputs.names.roce_claim_template, inputs.namespace, inputs.labels)
    return BenchmarkObjects(runtime=runtime, trainjob=trainjob, claim_template=claim)


def build_compute_domain(names: BenchmarkNames, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The NVLS ``ComputeDomain`` whose DRA reconciliation yields the IMEX claim template."""
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": names.compute_domain, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "numNodes": 0,
            "channel": {
                "allocationMode": "Single",
                "resourceClaimTemplate": {"name": names.imex_claim_template},
            },
        },
    }


# --------------------------------------------------------------------------------------------
# 4. Launcher log parsing (streaming, constant memory, fail-closed)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRow:
    size_bytes: int
    busbw_gbps: float  #: out-of-place busbw
    in_place_busbw_gbps: float


@dataclass(frozen=True)
class TransportInfo:
    """Transport banners seen in the log (first ``Using network`` wins)."""

    network: str | None = None  #: text after ``NCCL INFO Using network`` (e.g. ``AWS Libfabric``)
    nvls_available: bool = False
    nvls_comm: bool = False

    @property
    def network_plugin(self) -> str | None:
        """First token of :attr:`network` (what the Socket rule compares)."""
        return self.network.split()[0] if self.network else None

    @property
    def nvls(self) -> bool:
        return self.nvls_available and self.nvls_comm


@dataclass(frozen=True)
class NcclResult:
    busbw_gbps: float  #: out-of-place busbw of the largest message size: the value compared
    size_bytes: int  #: the message size of that row
    avg_busbw_gbps: float | None  #: the ``# Avg bus bandwidth`` trailer of the table, if any
    rows: tuple[SweepRow, ...]  #: the whole sweep of the table, in printed order (capped)
    transport: TransportInfo
    complete: bool  #: the table ended with its trailer (``# Out of bounds``/``# Avg bus bandwidth``)

    def to_json(self) -> dict[str, Any]:
        return {
            "busbw_gbps": self.busbw_gbps,
            "size_bytes": self.size_bytes,
            "avg_busbw_gbps": self.avg_busbw_gbps,
            "complete": self.complete,
            "rows": [{"size_bytes": r.size_bytes, "busbw_gbps": r.busbw_gbps} for r in self.rows],
            "transport": {"network": self.transport.network, "nvls": self.transport.nvls},
        }


MAX_SWEEP_ROWS = 1024
_MAX_LINE_BYTES = 1 << 20  #: longer lines are cut (constant memory on pathological input)
_KEEP_LINE_CHARS = 512  #: per-line cap of the diagnostic tail (CTRF line cap)
_CHUNK_BYTES = 8 << 20

# An optional kubectl --timestamps stamp, an optional mpirun --tag-output tag, then the line.
_TS = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)[ \t]"
_TAG = rb"\[\d+,\d+\]<std(?:out|err)>:"
# Candidate lines (table rows or '#' lines) are found by the regex engine; Python only looks at them.
_CANDIDATE_AFTER_NL = re.compile(rb"\n((?>(?:" + _TS + rb")?)(?>(?:" + _TAG + rb")?)[ \t]*[0-9#][^\n]*)")
_CANDIDATE_AT_START = re.compile(rb"(?>(?:" + _TS + rb")?)(?>(?:" + _TAG + rb")?)[ \t]*[0-9#][^\n]*")
_PREFIX_STR = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)[ \t])?"
    r"(?:\[\d+,\d+\]<std(?:out|err)>:)?"
)
_NET_MARK = b"NCCL INFO Using network "
_NVLS_AVAILABLE_MARK = b"NVLS multicast support is available"
_NVLS_COMM_RE = re.compile(rb"NVLS comm 0x[0-9a-fA-F]+")
_INT_RE = re.compile(r"\d+\Z")
_SIGNED_INT_RE = re.compile(r"-?\d+\Z")
_FLOAT_RE = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WRONG_RE = re.compile(r"(?:N/A|-?\d+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\Z")
_AVG_RE = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB_RE = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_PARAMS_RE = re.compile(r"maxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\)")


def _parse_group(tokens: Sequence[str]) -> float | None:
    """One ``time algbw busbw #wrong`` group → busbw, or ``None`` if malformed."""
    time_, algbw, busbw, wrong = tokens
    if not (
        _FLOAT_RE.match(time_)
        and _FLOAT_RE.match(algbw)
        and _FLOAT_RE.match(busbw)
        and _WRONG_RE.match(wrong)
    ):
        return None
    value = float(busbw)
    return value if math.isfinite(value) else None


def parse_row(line: str) -> SweepRow | None:
    """A results-table data row (current 13-column or older 12-column layout), else ``None``."""
    tokens = line.split()
    n = len(tokens)
    if n == 13:
        if not _SIGNED_INT_RE.match(tokens[4]):
            return None
        groups = (tokens[5:9], tokens[9:13])
    elif n == 12:
        groups = (tokens[4:8], tokens[8:12])
    else:
        return None
    if not (_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1])):
        return None
    if not (_WORD_RE.match(tokens[2]) and _WORD_RE.match(tokens[3])):
        return None
    oop = _parse_group(groups[0])
    inp = _parse_group(groups[1])
    if oop is None or inp is None:
        return None
    return SweepRow(size_bytes=int(tokens[0]), busbw_gbps=oop, in_place_busbw_gbps=inp)


def _row_like(line: str) -> bool:
    """Starts like a data row (two integers) but may be cut or laid out differently."""
    tokens = line.split(None, 2)
    return len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit()


@dataclass
class _Table:
    rows: list[SweepRow] = field(default_factory=list)
    row_count: int = 0
    best: SweepRow | None = None
    avg: float | None = None
    closed: bool = False
    oob_failed: int = 0
    partial_line: str | None = None
    max_bytes: int | None = None
    step: int | None = None
    step_is_factor: bool = True

    def add(self, row: SweepRow) -> None:
        self.row_count += 1
        if len(self.rows) < MAX_SWEEP_ROWS:
            self.rows.append(row)
        if self.best is None or row.size_bytes >= self.best.size_bytes:
            self.best = row
        self.partial_line = None


class AllReduceLogScanner:
    """Incremental ``all_reduce_perf`` launcher-log reader.

    Feed bytes (:meth:`feed`) or lines (:meth:`feed_lines`), then call :meth:`result`.  Memory is
    bounded by one chunk, the current and previous table (≤ :data:`MAX_SWEEP_ROWS` rows each) and
    the diagnostic tail, whatever the log size.
    """

    def __init__(self) -> None:
        self._carry = b""
        self._skipping_long_line = False
        self._tail: deque[str] = deque(maxlen=DIAGNOSTIC_TAIL_LINES)
        self._table: _Table | None = None
        self._last_with_rows: _Table | None = None
        self._pending_params: tuple[int, int, bool] | None = None
        self._orphan_avg: float | None = None
        self._rejected_rows = 0
        self._network: str | None = None
        self._nvls_available = False
        self._nvls_comm = False

    # -- input --------------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray) -> None:
        """Feed raw log bytes (any chunking).  ``data`` is not retained (it may be reused)."""
        if not data:
            return
        pos = 0
        if self._skipping_long_line:
            nl = data.find(b"\n")
            if nl < 0:
                return
            self._skipping_long_line = False
            pos = nl + 1
        last = data.rfind(b"\n", pos)
        if last < 0:
            self._carry += data[pos:]
            if len(self._carry) > _MAX_LINE_BYTES:
                self._scan(self._carry[:_MAX_LINE_BYTES])
                self._carry = b""
                self._skipping_long_line = True
            return
        if self._carry:
            first = data.find(b"\n", pos)
            line = self._carry + data[pos:first]
            self._carry = b""
            self._scan(line)
            pos = first + 1
        if pos <= last:
            self._scan(data, pos, last)
        self._carry = bytes(data[last + 1 :])

    def feed_lines(self, lines: Iterable[str | bytes], batch_bytes: int = 1 << 20) -> None:
        """Feed an iterable of lines (with or without line endings) in bounded batches."""
        batch: list[bytes] = []
        size = 0
        for line in lines:
            raw = line.encode("utf-8", "replace") if isinstance(line, str) else bytes(line)
            if not raw.endswith(b"\n"):
                raw += b"\n"
            batch.append(raw)
            size += len(raw)
            if size >= batch_bytes:
                self.feed(b"".join(batch))
                batch.clear()
                size = 0
        if batch:
            self.feed(b"".join(batch))

    def close(self) -> None:
        if self._carry:
            self._scan(self._carry)
            self._carry = b""

    # -- scanning -----------------------------------------------------------------------------

    def _scan(self, buf: bytes | bytearray, start: int = 0, end: int | None = None) -> None:
        """Scan the whole lines in ``buf[start:end]`` (``start`` begins a line; no trailing newline)."""
        if end is None:
            end = len(buf)
        m = _CANDIDATE_AT_START.match(buf, start, end)
        if m is not None:
            self._on_candidate(m.group(0))
        for m in _CANDIDATE_AFTER_NL.finditer(buf, start, end):
            self._on_candidate(m.group(1))
        if self._network is None:
            self._find_network(buf, start, end)
        if not self._nvls_available and buf.find(_NVLS_AVAILABLE_MARK, start, end) >= 0:
            self._nvls_available = True
        if not self._nvls_comm and _NVLS_COMM_RE.search(buf, start, end) is not None:
            self._nvls_comm = True
        # the last DIAGNOSTIC_TAIL_LINES lines of the region, found from its end
        cut, found = end, 0
        while found < DIAGNOSTIC_TAIL_LINES:
            j = buf.rfind(b"\n", start, cut)
            if j < 0:
                break
            cut, found = j, found + 1
        begin = cut + 1 if found == DIAGNOSTIC_TAIL_LINES else start
        for raw in buf[begin:end].split(b"\n"):
            self._tail.append(
                raw[: _KEEP_LINE_CHARS * 4].decode("utf-8", "replace").rstrip("\r")[:_KEEP_LINE_CHARS]
            )

    def _find_network(self, buf: bytes | bytearray, start: int, end: int) -> None:
        while True:
            i = buf.find(_NET_MARK, start, end)
            if i < 0:
                return
            eol = buf.find(b"\n", i, end)
            rest = buf[i + len(_NET_MARK) : eol if eol >= 0 else end].decode("utf-8", "replace").strip()
            if rest:
                self._network = rest
                return
            start = i + len(_NET_MARK)

    def _on_candidate(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        m = _PREFIX_STR.match(text)
        line = text[m.end() :] if m else text
        body = line.lstrip()
        if body.startswith("#"):
            self._on_comment(body)
            return
        row = parse_row(body)
        if row is not None:
            table = self._table
            if table is None or table.closed:  # rows after a closed table start a new (headerless) one
                table = self._new_table()
            table.add(row)
            return
        if _row_like(body):
            self._rejected_rows += 1
            if self._table is not None and not self._table.closed:
                self._table.partial_line = body[:200]

    def _new_table(self) -> _Table:
        self._finish_table()
        table = _Table()
        if self._pending_params is not None:
            table.max_bytes, table.step, table.step_is_factor = self._pending_params
            self._pending_params = None
        self._table = table
        return table

    def _finish_table(self) -> None:
        if self._table is not None and self._table.best is not None:
            self._last_with_rows = self._table

    def _on_comment(self, body: str) -> None:
        words = body[1:].split()
        lowered = [w.lower() for w in words[:3]]
        if lowered == ["size", "count", "type"]:
            self._new_table()
            return
        if words[:1] == ["nThread"]:
            pm = _PARAMS_RE.search(body)
            if pm:
                self._pending_params = (int(pm.group(1)), int(pm.group(2)), pm.group(3) == "factor")
            return
        am = _AVG_RE.match(body)
        if am:
            try:
                value: float | None = float(am.group(1))
            except ValueError:
                value = None
            target = self._current_or_last()
            if target is None:
                self._orphan_avg = value
            else:
                target.avg = value
                target.closed = True
            return
        om = _OOB_RE.match(body)
        if om:
            target = self._current_or_last()
            if target is not None:
                target.closed = True
                if int(om.group(1)) > 0 or om.group(2).upper() == "FAILED":
                    target.oob_failed = max(int(om.group(1)), 1)
            return
        if "Collective test concluded" in body and self._table is not None:
            self._table.closed = True

    def _current_or_last(self) -> _Table | None:
        if self._table is not None and (self._table.best is not None or not self._table.closed):
            return self._table
        return self._last_with_rows

    # -- output -------------------------------------------------------------------------------

    @property
    def transport(self) -> TransportInfo:
        return TransportInfo(
            network=self._network, nvls_available=self._nvls_available, nvls_comm=self._nvls_comm
        )

    @property
    def tail(self) -> list[str]:
        return list(self._tail)

    def result(self) -> NcclResult:
        """The parsed value; raises :class:`NcclParseError` (fail-closed) when there is none."""
        self.close()
        self._finish_table()
        table = self._last_with_rows
        if table is None or table.best is None:
            cause = MSG_NO_BANDWIDTH
            if self._rejected_rows:
                cause += ": " + MSG_REJECTED_ROWS.format(count=self._rejected_rows)
            avg = (
                self._table.avg
                if self._table is not None and self._table.avg is not None
                else self._orphan_avg
            )
            raise self._error(cause, avg=avg)
        best = table.best
        if table.oob_failed:
            raise self._error(MSG_OUT_OF_BOUNDS.format(count=table.oob_failed), table=table)
        if not table.closed:
            if table.partial_line is not None and table is self._table:
                raise self._error(MSG_TABLE_TRUNCATED_ROW.format(line=table.partial_line), table=table)
            if table.max_bytes is not None and table.step is not None:
                nxt = best.size_bytes * table.step if table.step_is_factor else best.size_bytes + table.step
                if table.step > (1 if table.step_is_factor else 0) and nxt <= table.max_bytes:
                    raise self._error(
                        MSG_TABLE_TRUNCATED_SWEEP.format(size=best.size_bytes, max_bytes=table.max_bytes),
                        table=table,
                    )
        return NcclResult(
            busbw_gbps=best.busbw_gbps,
            size_bytes=best.size_bytes,
            avg_busbw_gbps=table.avg,
            rows=tuple(table.rows),
            transport=self.transport,
            complete=table.closed,
        )

    def _error(self, cause: str, *, avg: float | None = None, table: _Table | None = None) -> NcclParseError:
        return NcclParseError(
            cause,
            tail=self.tail,
            transport=self.transport,
            avg_busbw_gbps=table.avg if table is not None else avg,
            rows=table.rows if table is not None else (),
        )


def parse_all_reduce(lines: Iterable[str | bytes] | str | bytes) -> NcclResult:
    """Parse a launcher log given as an iterable of lines (or one string), streaming.

    Value = out-of-place busbw of the largest-message row of the last results table.  Raises
    :class:`NcclParseError` when there is no table row (or the table is cut short).
    """
    scanner = AllReduceLogScanner()
    if isinstance(lines, str):
        scanner.feed(lines.encode("utf-8", "replace"))
    elif isinstance(lines, bytes | bytearray):
        scanner.feed(bytes(lines))
    else:
        scanner.feed_lines(lines)
    return scanner.result()


class _ReadInto(Protocol):
    def readinto(self, buffer: bytearray, /) -> int | None: ...


def parse_all_reduce_stream(stream: IO[bytes], chunk_bytes: int = _CHUNK_BYTES) -> NcclResult:
    """Parse a binary stream in fixed-size chunks (the fast path for big saved logs)."""
    scanner = AllReduceLogScanner()
    for chunk in _chunks(stream, chunk_bytes):
        scanner.feed(chunk)
    return scanner.result()


def _chunks(stream: IO[bytes], size: int) -> Iterator[bytes | bytearray]:
    """Fixed-size chunks; one reused buffer when the stream supports ``readinto``."""
    if hasattr(stream, "readinto"):
        reader: _ReadInto = stream
        buf = bytearray(size)
        while True:
            n = reader.readinto(buf)
            if not n:
                return
            yield buf if n == size else buf[:n]
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk


def parse_all_reduce_file(path: str | Path, chunk_bytes: int = _CHUNK_BYTES) -> NcclResult:
    with open(path, "rb") as fh:
        return parse_all_reduce_stream(fh, chunk_bytes)


# --------------------------------------------------------------------------------------------
# 5. Verdict
# --------------------------------------------------------------------------------------------


def verify_transport(variant: Variant, transport: TransportInfo) -> None:
    """The variant's transport rule (spec §A.13); raises :class:`TransportError`."""
    if variant == "net":
        plugin = transport.network_plugin
        if plugin is None:
            raise TransportError(MSG_NET_NO_BANNER)
        if plugin == "Socket":
            raise TransportError(MSG_NET_SOCKET)
    elif variant == "nvls":
        if not transport.nvls_available:
            raise TransportError(MSG_NVLS_NOT_AVAILABLE)
        if not transport.nvls_comm:
            raise TransportError(MSG_NVLS_NO_COMM)


def bandwidth_line(check: str, bandwidth_gbps: float) -> str:
    return MSG_BANDWIDTH_LINE.format(check=check, bandwidth=bandwidth_gbps)


def constraint_line(threshold: Threshold, passed: bool) -> str:
    return MSG_CONSTRAINT_LINE.format(constraint=threshold.raw, verdict="true" if passed else "false")


@dataclass(frozen=True)
class Verdict:
    passed: bool
    lines: tuple[str, str]  #: the two stdout lines of the guide
    failure: str | None  #: the failure message when not passed
    measurement: records.Measurement | None = None  #: the value against its constraint (reports)


def evaluate(check: str, threshold: Threshold, bandwidth_gbps: float) -> Verdict:
    """Compare a measured (and transport-verified) bandwidth with the threshold."""
    passed = threshold.passes(bandwidth_gbps)
    lines = (bandwidth_line(check, bandwidth_gbps), constraint_line(threshold, passed))
    failure = None if passed else MSG_NOT_SATISFIED.format(bandwidth=bandwidth_gbps, constraint=threshold.raw)
    measurement = records.Measurement(
        name="bus bandwidth",
        value=bandwidth_gbps,
        unit="GB/s",
        constraint=threshold.raw,
        tolerance=round(abs(threshold.effective / threshold.value - 1), 6) if threshold.value else None,
        effective_threshold=threshold.effective,
        passed=passed,
    )
    return Verdict(passed=passed, lines=lines, failure=failure, measurement=measurement)


def sweep_plot(check: str, rows: Sequence[SweepRow], threshold: Threshold | None) -> str:
    """SVG evidence: busbw vs message size with the constraint and its tolerance bound."""
    from aicr_pytest.nccl.plot import busbw_svg

    return busbw_svg(
        [(r.size_bytes, r.busbw_gbps) for r in rows],
        title=f"{check}: all_reduce_perf out-of-place busbw",
        threshold=threshold.value if threshold is not None else None,
        threshold_label=f"constraint {threshold.raw} GB/s" if threshold is not None else None,
        pass_bound=threshold.effective if threshold is not None else None,
    )


__all__ = [
    "CHECK_DEFAULT",
    "CHECK_NET",
    "CHECK_NVLS",
    "CHECK_VARIANTS",
    "KNOWN_PROFILES",
    "SUPPORTED_COMBINATIONS",
    "AllReduceLogScanner",
    "BenchmarkNames",
    "BenchmarkObjects",
    "CheckSkip",
    "Criteria",
    "NcclCheckFailure",
    "NcclParseError",
    "NcclResult",
    "PrivateRuntime",
    "RenderInputs",
    "SweepRow",
    "Threshold",
    "TransportError",
    "TransportInfo",
    "VariantPlan",
    "Verdict",
    "WorkerScheduling",
    "WorkerSizing",
    "apply_worker_scheduling",
    "benchmark_names",
    "build_compute_domain",
    "combination_supported",
    "constraint_pairs",
    "evaluate",
    "gke_network_interfaces",
    "max_message_size",
    "nvreg_override_set",
    "parse_all_reduce",
    "parse_all_reduce_file",
    "parse_all_reduce_stream",
    "parse_fabric",
    "parse_profile",
    "parse_row",
    "parse_threshold",
    "platform_worker_scheduling",
    "prevalidate",
    "render_benchmark",
    "resolve_runtime_ref",
    "resolve_variant",
    "select_target_nodes",
    "set_identity",
    "size_workers",
    "sweep_plot",
    "template_path",
    "uniform_fabric_count",
    "validate_private_runtime",
    "verify_transport",
    "worker_scheduling",
]
