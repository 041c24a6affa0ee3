"""inference-perf domain logic: guards, knobs, GPU node choice, AIPerf parsing, evaluation.

Everything here is a pure function over plain values and Kubernetes-object dicts (performance
spec §B); the check and the cluster facade do the I/O.  The intended order of a run:

1. :func:`preflight` — guard A (skip), comparator + knob validation (exit 2, before anything is
   deployed), guard B (skip); then :func:`guard_dgd_crd` on the CRD lookup (guard C).
2. :mod:`aicr_pytest.core.allocmode`: ``detect`` → ``reject_unsupported_gpu_topology``
   → print ``policy_evidence`` → ``verify_policy``.
3. :func:`discover_candidate_nodes` → :func:`count_used_gpus_by_node` (pods + claims, fail closed)
   → :func:`select_worker_node` → print :func:`wiring_evidence`.
4. Render the workload (:func:`render_workload`), deploy, wait (:func:`dgd_ready`,
   :func:`chat_completion_ready`), run the AIPerf Job (:func:`build_aiperf_job`).
5. :func:`parse_aiperf_output` (fail closed) → :func:`evaluate`.

Secrets: the HF token lives only in :class:`InferenceKnobs` (hidden from ``repr``) and in the
Secret built by :func:`build_hf_token_secret`; anything printed goes through :func:`redact` or
:func:`printable_manifest`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import secrets as _secrets
import shlex
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Protocol

from aicr_pytest.core import records, templates, yamlio
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
    parse_quantity,
)
from aicr_pytest.core.datatree import CATALOG_PATH
from aicr_pytest.core.errors import CheckSkip, Inconclusive, UsageError

# --- names (performance spec §B.5) ---------------------------------------------------------------
CHECK_NAME: Final = "inference-perf"
DYNAMO_COMPONENT: Final = "dynamo-platform"
DGD_CRD: Final = "dynamographdeployments.nvidia.com"
CONSTRAINT_THROUGHPUT: Final = "inference-throughput"
CONSTRAINT_TTFT: Final = "inference-ttft-p99"
CONSTRAINT_MODEL: Final = "inference-model"
CONSTRAINT_CONCURRENCY: Final = "inference-concurrency-per-gpu"
CONSTRAINT_ROUTING: Final = "inference-routing-mode"

NAMESPACE_PREFIX: Final = "aicr-inference-perf-"
AIPERF_JOB_PREFIX: Final = "aicr-aiperf-"
POPULATE_JOB_PREFIX: Final = "aicr-model-cache-populate-"
DEPLOYMENT_NAME: Final = "aicr-inference-perf"
QUEUE_NAME: Final = "aicr-inference-perf"
CLAIM_TEMPLATE_NAME: Final = "aicr-inference-gpu-claim"
MODEL_CACHE_PVC: Final = "aicr-model-cache"
HF_SECRET_NAME: Final = "aicr-hf-token"
HF_SECRET_KEY: Final = "token"
HF_TOKEN_ENV_NAMES: Final = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
HTTP_ROUTE_NAME: Final = "aicr-inference-perf-route"
FRONTEND_SERVICE: Final = "aicr-inference-perf-frontend"
GATEWAY_NAMESPACE: Final = "agentgateway-system"
GATEWAY_NAME: Final = "inference-gateway"
RUNTIME_IMAGE: Final = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.1"
EPP_IMAGE: Final = "nvcr.io/nvidia/ai-dynamo/epp-image:1.2.1"
AIPERF_IMAGE: Final = "ghcr.io/nvidia/aicr-validators/aiperf-bench:latest"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "aicr-pytest"
RUN_ID_LABEL: Final = "aicr.run/run-id"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
MODEL_CACHE_MOUNT: Final = "/model-cache"

ROUTING_DYNAMO: Final = "dynamo-router"
ROUTING_GATEWAY: Final = "gateway-epp"
ROUTING_MODES: Final = (ROUTING_DYNAMO, ROUTING_GATEWAY)

# --- knob names and defaults (performance spec §B.3) ---------------------------------------------
ENV_MODEL: Final = "AICR_INFERENCE_PERF_MODEL"
ENV_CONCURRENCY: Final = "AICR_INFERENCE_PERF_CONCURRENCY_PER_GPU"
ENV_WARMUP: Final = "AICR_INFERENCE_PERF_WARMUP_PER_CONCURRENCY"
ENV_MIN_REQUESTS: Final = "AICR_INFERENCE_PERF_MIN_REQUESTS"
ENV_REQUESTS_PER_CONCURRENCY: Final = "AICR_INFERENCE_PERF_REQUESTS_PER_CONCURRENCY"
ENV_INPUT_TOKENS: Final = "AICR_INFERENCE_PERF_INPUT_TOKENS_MEAN"
ENV_OUTPUT_TOKENS: Final = "AICR_INFERENCE_PERF_OUTPUT_TOKENS_MEAN"
ENV_WORKLOAD_READY_TIMEOUT: Final = "AICR_INFERENCE_PERF_WORKLOAD_READY_TIMEOUT"
ENV_HEALTH_TIMEOUT: Final = "AICR_INFERENCE_PERF_HEALTH_TIMEOUT"
ENV_CACHE_SIZE: Final = "AICR_INFERENCE_PERF_MODEL_CACHE_SIZE"
ENV_CACHE_STORAGE_CLASS: Final = "AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS"
ENV_NO_CLEANUP: Final = "AICR_INFERENCE_PERF_NO_CLEANUP"
ENV_HF_TOKEN: Final = "HF_TOKEN"
#: Only these two come from the shell running aicr-pytest; catalog entries with these names are ignored.
SHELL_ONLY_ENV: Final = frozenset({ENV_NO_CLEANUP, ENV_HF_TOKEN})

DEFAULT_MODEL: Final = "Qwen/Qwen3-8B"
DEFAULT_CONCURRENCY_PER_GPU: Final = 256
DEFAULT_ROUTING_MODE: Final = ROUTING_DYNAMO
DEFAULT_WARMUP_PER_CONCURRENCY: Final = 1
DEFAULT_MIN_REQUESTS: Final = 1000
DEFAULT_REQUESTS_PER_CONCURRENCY: Final = 8
DEFAULT_INPUT_TOKENS: Final = 128
DEFAULT_OUTPUT_TOKENS: Final = 128
DEFAULT_WORKLOAD_READY_TIMEOUT_S: Final = 600.0
DEFAULT_HEALTH_TIMEOUT_S: Final = 300.0
DEFAULT_CACHE_SIZE: Final = "100Gi"
CACHE_DISABLE_SENTINELS: Final = frozenset({"off", "0", "none", "disabled"})
AIPERF_DATASET_ENTRIES: Final = 100
AIPERF_RANDOM_SEED: Final = 100
TOLERANCE: Final = 0.10

# --- user-facing messages ------------------------------------------------------------------------
SKIP_NO_CONSTRAINT: Final = "no inference-throughput or inference-ttft-p99 constraint in recipe"
SKIP_NO_DYNAMO: Final = "skipped - dynamo-platform not in recipe components"
SKIP_NO_DGD_CRD: Final = (
    "skipped - DynamoGraphDeployment CRD not installed on cluster "
    "(dynamo-platform component declared but operator not deployed yet)"
)
MSG_CRD_LOOKUP_FAILED: Final = "failed to check for DynamoGraphDeployment CRD: {error}"

MSG_INVALID_MODEL: Final = (
    'invalid inference model "{model}": must be a Hugging Face model ID (characters [A-Za-z0-9._/-])'
)
MSG_INVALID_CONCURRENCY: Final = 'invalid inference-concurrency-per-gpu="{value}": must be a positive integer'
MSG_INVALID_ROUTING: Final = (
    'invalid inference-routing-mode="{value}": must be "dynamo-router" or "gateway-epp"'
)
MSG_INVALID_INT_KNOB: Final = 'invalid {name}="{value}": must be a positive integer'
MSG_INVALID_DURATION_KNOB: Final = 'invalid {name}="{value}": must be a positive Go duration (e.g. 30m)'
MSG_INVALID_CACHE_SIZE: Final = (
    'invalid {name}="{value}": must be a Kubernetes quantity (e.g. 100Gi) or a disable sentinel '
    "(off/0/none/disabled)"
)
MSG_CACHE_SIZE_NOT_POSITIVE: Final = 'invalid {name}="{value}": cache size must be positive'
MSG_COMPARATOR: Final = (
    '{name} constraint must start with "{op}" (got "{value}"); inference-perf uses a narrower operator '
    'subset than other constraints: inference-throughput accepts only ">=" and inference-ttft-p99 only "<="'
)
MSG_COMPARATOR_EXACT: Final = (
    '{name} constraint must start with exactly "{op}" (got "{value}"); extra operator characters after '
    '"{op}" are not allowed'
)
MSG_THRESHOLD_EMPTY: Final = 'invalid threshold: no numeric value found in "{value}"'
MSG_THRESHOLD_FORMAT: Final = 'invalid threshold format: cannot parse "{token}" in "{value}" as a number'

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

AIPERF_SENTINEL: Final = "===AIPERF-RESULT==="
MSG_AIPERF_NO_SENTINEL: Final = (
    'AIPerf result sentinel "===AIPERF-RESULT===" not found in pod logs (length={length}); '
    "benchmark likely failed"
)
MSG_AIPERF_NO_END_SENTINEL: Final = (
    "AIPerf result end sentinel not found in pod logs; benchmark may have been truncated"
)
MSG_AIPERF_BAD_JSON: Final = "failed to parse AIPerf JSON output: {error}"
MSG_AIPERF_MISSING: Final = "AIPerf output is missing {keys}; refusing to read a missing metric as 0"
MSG_AIPERF_NOT_NUMERIC: Final = "AIPerf output has a non-numeric {key}: {value}"
METRIC_THROUGHPUT: Final = ("output_token_throughput", "avg")
METRIC_TTFT_P99: Final = ("time_to_first_token", "p99")

RESULT_THROUGHPUT: Final = "RESULT: Inference throughput: {value:.2f} tokens/sec"
RESULT_TTFT: Final = "RESULT: Inference TTFT p99: {value:.2f} ms"
MSG_GATE_SCALED: Final = (
    "Throughput gate scaled to {g} of {G} node GPUs benchmarked: {threshold:.0f} → {effective:.0f} tokens/sec"
)
LINE_THROUGHPUT: Final = "Throughput constraint: {value} → {verdict}"
LINE_TTFT: Final = "TTFT p99 constraint: {value} → {verdict}"
MSG_THROUGHPUT_FAIL: Final = (
    "inference throughput {value:.2f} tokens/sec does not satisfy constraint "
    '"{constraint}" (with 10% tolerance)'
)
MSG_THROUGHPUT_FAIL_SCALED: Final = " — gate scaled to {effective:.0f} for {g} of {G} node GPUs benchmarked"
MSG_TTFT_FAIL: Final = (
    'inference TTFT p99 {value:.2f} ms does not satisfy constraint "{constraint}" (with 10% tolerance)'
)
MSG_NO_DEFAULT_STORAGE_CLASS: Final = (
    "model-weights cache is enabled but the cluster has no default StorageClass and "
    "AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS is unset; set "
    "AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS=<name> (e.g. gp2/gp3 on EKS, standard-rwo on GKE) or "
    "disable the cache with AICR_INFERENCE_PERF_MODEL_CACHE_SIZE=off"
)
REDACTED: Final = "<redacted>"
MSG_DGD_NOT_READY: Final = (
    "[INTERNAL] DynamoGraphDeployment not ready: [TIMEOUT] timed out waiting for DynamoGraphDeployment "
    "to become ready: {state}"
)
MSG_ENDPOINT_TIMEOUT: Final = (
    "[TIMEOUT] timed out waiting for inference endpoint to serve requests: context deadline exceeded"
)
MSG_AIPERF_NO_POD: Final = "[TIMEOUT] failed to find AIPerf pod for job {namespace}/{job} within {timeout}"
MSG_AIPERF_FAILED: Final = "[INTERNAL] AIPerf job failed: {detail}"
MSG_AIPERF_TIMEOUT: Final = "[TIMEOUT] AIPerf job {namespace}/{job} did not finish within {timeout}: {state}"
MSG_CACHE_POPULATE_FAILED: Final = "[INTERNAL] model-cache populate Job {namespace}/{job} failed: {detail}"
MSG_CACHE_POPULATE_TIMEOUT: Final = (
    "[TIMEOUT] model-cache populate Job {namespace}/{job} did not complete within {timeout} "
    "(AICR_INFERENCE_PERF_WORKLOAD_READY_TIMEOUT): {state}"
)
MSG_CATALOG_ENV: Final = (
    "validators/catalog.yaml: the inference-perf entry's env must be a list of {{name, value}} entries "
    "(got {got})"
)
#: AIPerf pod phases: no pod within 5m, no verdict within 15m (performance spec §B.8).
AIPERF_POD_TIMEOUT_S: Final = 300.0
AIPERF_RUN_TIMEOUT_S: Final = 900.0

TEMPLATE_SUBDIR: Final = "inference"  # under the ``runtimes`` package


class InferenceFailure(AssertionError):
    """inference-perf failed (CTRF ``failed``): a fail-closed decision or an unmet constraint.

    An ``AssertionError`` so pytest reports it as a failure, not an error (``other``).
    """


class CatalogSource(Protocol):
    """What we read the validator catalog from (``aicr_pytest.core.datatree.DataTree`` fits)."""

    def load_merged(self, relpath: str, list_key: str) -> dict[str, Any] | None: ...


class RecipeLike(Protocol):
    """What :func:`prevalidate` reads from a recipe (``aicr_pytest.core.recipe.Recipe`` fits)."""

    def phase_constraints(self, phase: str) -> Sequence[ConstraintLike]: ...


class ConstraintLike(Protocol):
    """What we read from a recipe constraint (``aicr_pytest.core.recipe.Constraint`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...


def find_constraint(constraints: Iterable[ConstraintLike], name: str) -> str | None:
    """Value of the first constraint called ``name`` (AICR ``findPerformanceConstraint``)."""
    for c in constraints:
        if c.name == name:
            return str(c.value)
    return None


# --- guards (performance spec §B.2) --------------------------------------------------------------


def guard_constraints(constraints: Iterable[ConstraintLike]) -> None:
    """Guard A: skip unless a throughput or TTFT constraint is declared."""
    items = list(constraints)
    if (
        find_constraint(items, CONSTRAINT_THROUGHPUT) is None
        and find_constraint(items, CONSTRAINT_TTFT) is None
    ):
        raise CheckSkip(SKIP_NO_CONSTRAINT)


def guard_dynamo_component(component_names: Iterable[str] | None) -> None:
    """Guard B: skip unless ``dynamo-platform`` is among the recipe's componentRefs."""
    if component_names is None or DYNAMO_COMPONENT not in set(component_names):
        raise CheckSkip(SKIP_NO_DYNAMO)


def guard_dgd_crd(lookup: bool | BaseException) -> None:
    """Guard C from a lookup of the ``dynamographdeployments.nvidia.com`` CRD.

    ``True``: present.  ``False`` or an exception carrying HTTP status 404: skip.  Any other
    exception (RBAC, timeout, ...) is :class:`Inconclusive` — never a skip.
    """
    if lookup is True:
        return
    if lookup is False or getattr(lookup, "status", None) == 404:
        raise CheckSkip(SKIP_NO_DGD_CRD)
    raise Inconclusive(MSG_CRD_LOOKUP_FAILED.format(error=lookup))


# --- thresholds and comparators (performance spec §A.14, §B.9) -----------------------------------

_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def parse_threshold(value: str) -> float:
    """Strip a leading comparator run and any unit, then read a finite number."""
    rest = value.strip().lstrip("><=! ").strip()
    token = rest.split(" ", 1)[0] if rest else ""
    if not token:
        raise UsageError(MSG_THRESHOLD_EMPTY.format(value=value))
    if not _FLOAT_RE.fullmatch(token):
        raise UsageError(MSG_THRESHOLD_FORMAT.format(token=token, value=value))
    return float(token)


def require_comparator(name: str, value: str, op: str) -> float:
    """``value`` must start with exactly ``op`` (``>=`` or ``<=``); return its threshold."""
    text = value.strip()
    if not text.startswith(op):
        raise UsageError(MSG_COMPARATOR.format(name=name, op=op, value=value))
    after = text[len(op) :].lstrip(" ")
    if after[:1] and after[0] in "><=!":
        raise UsageError(MSG_COMPARATOR_EXACT.format(name=name, op=op, value=value))
    return parse_threshold(value)


# --- knobs (performance spec §B.3) ---------------------------------------------------------------

_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_ATOI_RE = re.compile(r"[+-]?[0-9]+")
_DURATION_PART_RE = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_INT64_MAX: Final = 2**63 - 1


def go_atoi(text: str) -> int | None:
    """``strconv.Atoi``: optional sign, ASCII digits, int64 range; anything else → ``None``."""
    if not _ATOI_RE.fullmatch(text):
        return None
    n = int(text)
    return n if -_INT64_MAX - 1 <= n <= _INT64_MAX else None


def parse_go_duration(text: str) -> float | None:
    """``time.ParseDuration`` in seconds (``"90s"``, ``"1h30m"``, ``"1.5h"``); invalid → ``None``."""
    s = text
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        return None
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _DURATION_PART_RE.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            return None
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


@dataclass(frozen=True)
class InferenceKnobs:
    """Resolved inputs of one inference-perf run (recipe > catalog env > default)."""

    model: str = DEFAULT_MODEL
    concurrency_per_gpu: int = DEFAULT_CONCURRENCY_PER_GPU
    routing_mode: str = DEFAULT_ROUTING_MODE
    warmup_per_concurrency: int = DEFAULT_WARMUP_PER_CONCURRENCY
    min_requests: int = DEFAULT_MIN_REQUESTS
    requests_per_concurrency: int = DEFAULT_REQUESTS_PER_CONCURRENCY
    input_tokens_mean: int = DEFAULT_INPUT_TOKENS
    output_tokens_mean: int = DEFAULT_OUTPUT_TOKENS
    workload_ready_timeout_s: float = DEFAULT_WORKLOAD_READY_TIMEOUT_S
    health_timeout_s: float = DEFAULT_HEALTH_TIMEOUT_S
    #: ``None`` when the model cache is disabled.
    model_cache_size: str | None = DEFAULT_CACHE_SIZE
    model_cache_storage_class: str | None = None
    no_cleanup: bool = False
    hf_token: str | None = field(default=None, repr=False)
    throughput_constraint: str | None = None
    throughput_threshold: float | None = None
    ttft_constraint: str | None = None
    ttft_threshold: float | None = None

    @property
    def model_cache_enabled(self) -> bool:
        return self.model_cache_size is not None


def _positive_int_env(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    n = go_atoi(raw)
    if n is None or n <= 0:
        raise UsageError(MSG_INVALID_INT_KNOB.format(name=name, value=raw))
    return n


def _positive_duration_env(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    seconds = parse_go_duration(raw)
    if seconds is None or seconds <= 0:
        raise UsageError(MSG_INVALID_DURATION_KNOB.format(name=name, value=raw))
    return seconds


def _cache_size_env(env: Mapping[str, str]) -> str | None:
    raw = env.get(ENV_CACHE_SIZE)
    text = (raw or "").strip()
    if not text:
        return DEFAULT_CACHE_SIZE
    if text.lower() in CACHE_DISABLE_SENTINELS:
        return None
    try:
        size = parse_quantity(text)
    except ValueError:
        raise UsageError(MSG_INVALID_CACHE_SIZE.format(name=ENV_CACHE_SIZE, value=raw)) from None
    if size <= Decimal(0):
        raise UsageError(MSG_CACHE_SIZE_NOT_POSITIVE.format(name=ENV_CACHE_SIZE, value=raw))
    return text


def parse_go_bool(text: str | None) -> bool:
    """``strconv.ParseBool`` true values; anything else (including errors) is false."""
    return text in ("1", "t", "T", "TRUE", "true", "True")


def resolve_knobs(
    constraints: Iterable[ConstraintLike],
    catalog_env: Mapping[str, str] | None = None,
    shell_env: Mapping[str, str] | None = None,
) -> InferenceKnobs:
    """Resolve and validate every knob and comparator; the first bad one raises :class:`UsageError`.

    ``catalog_env`` is the inference-perf catalog entry's ``env`` (after ``--data`` overlays) —
    never ``os.environ``.  ``shell_env`` is the environment of the process running aicr-pytest;
    only ``AICR_INFERENCE_PERF_NO_CLEANUP`` and ``HF_TOKEN`` are read from it.
    """
    items = list(constraints)
    env = {k: v for k, v in (catalog_env or {}).items() if k not in SHELL_ONLY_ENV}
    shell = shell_env or {}

    throughput = find_constraint(items, CONSTRAINT_THROUGHPUT)
    ttft = find_constraint(items, CONSTRAINT_TTFT)
    throughput_threshold = (
        require_comparator(CONSTRAINT_THROUGHPUT, throughput, ">=") if throughput is not None else None
    )
    ttft_threshold = require_comparator(CONSTRAINT_TTFT, ttft, "<=") if ttft is not None else None

    model = (find_constraint(items, CONSTRAINT_MODEL) or "").strip()
    if not model:
        model = (env.get(ENV_MODEL) or "").strip() or DEFAULT_MODEL
    if not _MODEL_RE.fullmatch(model):
        raise UsageError(MSG_INVALID_MODEL.format(model=model))

    recipe_concurrency = find_constraint(items, CONSTRAINT_CONCURRENCY)
    if recipe_concurrency is not None and recipe_concurrency.strip():
        n = go_atoi(recipe_concurrency.strip())
        if n is None or n <= 0:
            raise UsageError(MSG_INVALID_CONCURRENCY.format(value=recipe_concurrency))
        concurrency = n
    else:
        concurrency = _positive_int_env(env, ENV_CONCURRENCY, DEFAULT_CONCURRENCY_PER_GPU)

    routing_raw = find_constraint(items, CONSTRAINT_ROUTING)
    routing = (routing_raw or "").strip() or DEFAULT_ROUTING_MODE
    if routing not in ROUTING_MODES:
        raise UsageError(MSG_INVALID_ROUTING.format(value=routing_raw))

    warmup = _positive_int_env(env, ENV_WARMUP, DEFAULT_WARMUP_PER_CONCURRENCY)
    min_requests = _positive_int_env(env, ENV_MIN_REQUESTS, DEFAULT_MIN_REQUESTS)
    per_concurrency = _positive_int_env(env, ENV_REQUESTS_PER_CONCURRENCY, DEFAULT_REQUESTS_PER_CONCURRENCY)
    input_tokens = _positive_int_env(env, ENV_INPUT_TOKENS, DEFAULT_INPUT_TOKENS)
    output_tokens = _positive_int_env(env, ENV_OUTPUT_TOKENS, DEFAULT_OUTPUT_TOKENS)
    ready_timeout = _positive_duration_env(env, ENV_WORKLOAD_READY_TIMEOUT, DEFAULT_WORKLOAD_READY_TIMEOUT_S)
    health_timeout = _positive_duration_env(env, ENV_HEALTH_TIMEOUT, DEFAULT_HEALTH_TIMEOUT_S)
    cache_size = _cache_size_env(env)
    storage_class = (env.get(ENV_CACHE_STORAGE_CLASS) or "").strip() or None

    return InferenceKnobs(
        model=model,
        concurrency_per_gpu=concurrency,
        routing_mode=routing,
        warmup_per_concurrency=warmup,
        min_requests=min_requests,
        requests_per_concurrency=per_concurrency,
        input_tokens_mean=input_tokens,
        output_tokens_mean=output_tokens,
        workload_ready_timeout_s=ready_timeout,
        health_timeout_s=health_timeout,
        model_cache_size=cache_size,
        model_cache_storage_class=storage_class,
        no_cleanup=parse_go_bool(shell.get(ENV_NO_CLEANUP)),
        hf_token=shell.get(ENV_HF_TOKEN) or None,
        throughput_constraint=throughput,
        throughput_threshold=throughput_threshold,
        ttft_constraint=ttft,
        ttft_threshold=ttft_threshold,
    )


def catalog_env(data: CatalogSource | None) -> dict[str, str]:
    """The inference-perf entry's ``env`` from ``validators/catalog.yaml`` (embedded + ``--data`` overlay).

    Entries are ``{name, value}`` like a container's env (AICR's catalog shape); a mapping
    ``NAME: value`` is accepted too.  No catalog or no entry → empty.
    """
    if data is None:
        return {}
    doc = data.load_merged(CATALOG_PATH, "validators")
    entries = (doc or {}).get("validators") or []
    entry = next((e for e in entries if isinstance(e, Mapping) and e.get("name") == CHECK_NAME), None)
    raw = (entry or {}).get("env") or []
    if isinstance(raw, Mapping):
        return {str(k): "" if v is None else str(v) for k, v in raw.items()}
    if not isinstance(raw, list):
        raise UsageError(MSG_CATALOG_ENV.format(got=type(raw).__name__))
    env: dict[str, str] = {}
    for item in raw:
        if not isinstance(item, Mapping) or not item.get("name"):
            raise UsageError(MSG_CATALOG_ENV.format(got=json.dumps(item, default=str)))
        value = item.get("value")
        env[str(item["name"])] = "" if value is None else str(value)
    return env


def prevalidate(recipe: RecipeLike, settings: object, data: CatalogSource | None) -> None:
    """Session-start validation of every knob and comparator (exit 2 before anything is deployed).

    A recipe without throughput/TTFT constraints is not an error here: the check skips (guard A).
    Knobs come from the recipe and the catalog env; ``HF_TOKEN`` and ``AICR_INFERENCE_PERF_NO_CLEANUP``
    from the shell.
    """
    constraints = recipe.phase_constraints("performance")
    try:
        guard_constraints(constraints)
    except CheckSkip:
        return
    resolve_knobs(constraints, catalog_env(data), os.environ)


def preflight(
    constraints: Iterable[ConstraintLike],
    component_names: Iterable[str] | None,
    catalog_env: Mapping[str, str] | None = None,
    shell_env: Mapping[str, str] | None = None,
) -> InferenceKnobs:
    """Guard A, then all knob/comparator validation, then guard B — no cluster access at all."""
    items = list(constraints)
    guard_constraints(items)
    knobs = resolve_knobs(items, catalog_env, shell_env)
    guard_dynamo_component(component_names)
    return knobs


# --- occupancy (performance spec §B.4) -----------------------------------------------------------


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


# --- candidates and selection (performance spec §B.4) --------------------------------------------


def go_map(selector: Mapping[str, str]) -> str:
    """Go's ``%v`` rendering of a ``map[string]string``: ``map[a:b c:d]`` (sorted keys)."""
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(selector.items())) + "]"


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


# --- evaluation (performance spec §B.9) ----------------------------------------------------------


def scaled_throughput_threshold(threshold: float, gpu_count: int, gpu_count_per_node: int) -> float:
    """The full-node gate scaled by ``gpu_count / gpu_count_per_node`` when the node was partly busy."""
    if 0 < gpu_count < gpu_count_per_node:
        return threshold * gpu_count / gpu_count_per_node
    return threshold


@dataclass(frozen=True)
class Evaluation:
    """Lines to print (RESULT lines first) and the failure messages, if any."""

    lines: tuple[str, ...]
    failures: tuple[str, ...]
    #: throughput and TTFT p99 against their constraints (reports); judged only when constrained
    measurements: tuple[records.Measurement, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures


def evaluate(
    throughput: float,
    ttft_p99_ms: float,
    knobs: InferenceKnobs,
    gpu_count: int,
    gpu_count_per_node: int,
) -> Evaluation:
    """Compare measured values to the recipe gates with 10 % tolerance.

    Throughput passes at ``>= 0.9 × gate`` (gate scaled for a partly occupied node); TTFT p99
    passes at ``<= 1.1 × ceiling`` and is never scaled.  Both constraints are always evaluated.
    """
    lines = [RESULT_THROUGHPUT.format(value=throughput), RESULT_TTFT.format(value=ttft_p99_ms)]
    failures: list[str] = []
    measured = {
        "throughput": records.Measurement(name="inference throughput", value=throughput, unit="tokens/sec"),
        "ttft": records.Measurement(name="inference TTFT p99", value=ttft_p99_ms, unit="ms"),
    }
    if knobs.throughput_constraint is not None and knobs.throughput_threshold is not None:
        threshold = knobs.throughput_threshold
        effective = scaled_throughput_threshold(threshold, gpu_count, gpu_count_per_node)
        scaled = effective != threshold
        if scaled:
            lines.append(
                MSG_GATE_SCALED.format(
                    g=gpu_count, G=gpu_count_per_node, threshold=threshold, effective=effective
                )
            )
        ok = throughput >= effective * (1 - TOLERANCE)
        lines.append(
            LINE_THROUGHPUT.format(value=knobs.throughput_constraint, verdict="PASS" if ok else "FAIL")
        )
        measured["throughput"] = measured["throughput"].model_copy(
            update={
                "constraint": knobs.throughput_constraint,
                "tolerance": TOLERANCE,
                "effective_threshold": effective * (1 - TOLERANCE),
                "passed": ok,
            }
        )
        if not ok:
            msg = MSG_THROUGHPUT_FAIL.format(value=throughput, constraint=knobs.throughput_constraint)
            if scaled:
                msg += MSG_THROUGHPUT_FAIL_SCALED.format(
                    effective=effective, g=gpu_count, G=gpu_count_per_node
                )
            failures.append(msg)
    if knobs.ttft_constraint is not None and knobs.ttft_threshold is not None:
        ok = ttft_p99_ms <= knobs.ttft_threshold * (1 + TOLERANCE)
        lines.append(LINE_TTFT.format(value=knobs.ttft_constraint, verdict="PASS" if ok else "FAIL"))
        measured["ttft"] = measured["ttft"].model_copy(
            update={
                "constraint": knobs.ttft_constraint,
                "tolerance": TOLERANCE,
                "effective_threshold": knobs.ttft_threshold * (1 + TOLERANCE),
                "passed": ok,
            }
        )
        if not ok:
            failures.append(MSG_TTFT_FAIL.format(value=ttft_p99_ms, constraint=knobs.ttft_constraint))
    return Evaluation(tuple(lines), tuple(failures), tuple(measured.values()))


# --- AIPerf output (performance spec §B.8, §E.9) -------------------------------------------------


@dataclass(frozen=True)
class AIPerfMetrics:
    """What a saved AIPerf output yielded; ``error`` is ``None`` only when both values were found."""

    throughput_tokens_per_s: float | None
    ttft_p99_ms: float | None
    error: str | None
    source: str  # "log" (sentinel-delimited Job log) or "json" (profile export)

    @property
    def ok(self) -> bool:
        return self.error is None


def _extract_json_text(text: str) -> tuple[str | None, str | None, str]:
    """(json text, error, source) from a Job log with sentinels or a bare profile export."""
    start = text.find(AIPERF_SENTINEL)
    if start < 0:
        stripped = text.strip()
        if stripped.startswith("{"):
            return stripped, None, "json"
        return None, MSG_AIPERF_NO_SENTINEL.format(length=len(text)), "log"
    rest = text[start + len(AIPERF_SENTINEL) :]
    end = rest.find(AIPERF_SENTINEL)
    if end < 0:
        return None, MSG_AIPERF_NO_END_SENTINEL, "log"
    return rest[:end].strip(), None, "log"


def _metric(data: Mapping[str, Any], path: tuple[str, str]) -> tuple[float | None, str | None]:
    """(value, None) or (None, "missing") / (None, non-numeric message)."""
    outer = data.get(path[0])
    dotted = ".".join(path)
    if not isinstance(outer, Mapping) or path[1] not in outer:
        return None, "missing"
    value = outer[path[1]]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None, MSG_AIPERF_NOT_NUMERIC.format(key=dotted, value=json.dumps(value))
    return float(value), None


def read_aiperf_metrics(text: str) -> AIPerfMetrics:
    """Parse AIPerf output without raising; every problem lands in ``error``."""
    body, error, source = _extract_json_text(text)
    if body is None:
        return AIPerfMetrics(None, None, error, source)
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except ValueError as exc:
        return AIPerfMetrics(None, None, MSG_AIPERF_BAD_JSON.format(error=exc), source)
    if not isinstance(data, Mapping):
        return AIPerfMetrics(
            None, None, MSG_AIPERF_BAD_JSON.format(error="top-level value is not a JSON object"), source
        )
    throughput, t_err = _metric(data, METRIC_THROUGHPUT)
    ttft, f_err = _metric(data, METRIC_TTFT_P99)
    missing = [
        ".".join(p) for p, e in ((METRIC_THROUGHPUT, t_err), (METRIC_TTFT_P99, f_err)) if e == "missing"
    ]
    problems: list[str] = []
    if missing:
        problems.append(MSG_AIPERF_MISSING.format(keys=" and ".join(f'"{k}"' for k in missing)))
    problems.extend(e for e in (t_err, f_err) if e is not None and e != "missing")
    return AIPerfMetrics(throughput, ttft, "; ".join(problems) or None, source)


def _reject_constant(name: str) -> float:
    raise ValueError(f"invalid JSON constant {name}")


def parse_aiperf_output(text: str) -> tuple[float, float]:
    """(throughput tokens/sec, TTFT p99 ms) from AIPerf output; :class:`InferenceFailure` otherwise."""
    metrics = read_aiperf_metrics(text)
    if metrics.error is not None or metrics.throughput_tokens_per_s is None or metrics.ttft_p99_ms is None:
        raise InferenceFailure(metrics.error or "AIPerf output yielded no metrics")
    return metrics.throughput_tokens_per_s, metrics.ttft_p99_ms


# --- run id, names, AIPerf Job (performance spec §B.5, §B.8) -------------------------------------


def derive_run_id(aicr_run_id: str | None, worker: str | None = None) -> str:
    """First 8 hex chars of sha256 of the run id (+ ``:<xdist worker>`` when given); random when unset."""
    if not aicr_run_id:
        return _secrets.token_hex(4)
    seed = aicr_run_id if not worker else f"{aicr_run_id}:{worker}"
    return hashlib.sha256(seed.encode()).hexdigest()[:8]


def workload_namespace(run_id: str) -> str:
    return NAMESPACE_PREFIX + run_id


def aiperf_job_name(run_id: str) -> str:
    return AIPERF_JOB_PREFIX + run_id


def populate_job_name(run_id: str) -> str:
    return POPULATE_JOB_PREFIX + run_id


def run_labels(run_id: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, RUN_ID_LABEL: run_id}


@dataclass(frozen=True)
class AIPerfCounts:
    concurrency: int
    request_count: int
    warmup_request_count: int


def aiperf_counts(knobs: InferenceKnobs, gpu_count: int) -> AIPerfCounts:
    """concurrency = per-GPU × GPUs; requests = max(min, concurrency × per-concurrency); warm-up scales."""
    concurrency = knobs.concurrency_per_gpu * gpu_count
    return AIPerfCounts(
        concurrency=concurrency,
        request_count=max(knobs.min_requests, concurrency * knobs.requests_per_concurrency),
        warmup_request_count=concurrency * knobs.warmup_per_concurrency,
    )


def aiperf_script(endpoint: str, knobs: InferenceKnobs, counts: AIPerfCounts) -> str:
    """Deterministic benchmark script: fixed seed and prompt pool, stddev 0, temperature 0.

    The model is read from ``$AICR_MODEL``, never interpolated into the shell text.
    """
    args = [
        f"--url {shlex.quote(endpoint)} --endpoint-type chat --streaming",
        f"--concurrency {counts.concurrency} --request-count {counts.request_count} "
        f"--warmup-request-count {counts.warmup_request_count}",
        f"--prompt-input-tokens-mean {knobs.input_tokens_mean} --prompt-input-tokens-stddev 0",
        f"--prompt-output-tokens-mean {knobs.output_tokens_mean} --prompt-output-tokens-stddev 0",
        f"--num-dataset-entries {AIPERF_DATASET_ENTRIES} --random-seed {AIPERF_RANDOM_SEED} "
        "--extra-inputs temperature:0",
        "--output-artifact-dir /tmp/aiperf --export-level summary",
    ]
    return "\n".join(
        [
            "set -e",
            'aiperf profile "$AICR_MODEL" \\',
            *(f"  {a} \\" for a in args[:-1]),
            f"  {args[-1]}",
            f"echo '{AIPERF_SENTINEL}'",
            "cat /tmp/aiperf/profile_export_aiperf.json",
            f"echo '{AIPERF_SENTINEL}'",
        ]
    )


def image_pull_policy(image: str) -> str:
    """Digest → IfNotPresent; ``:latest`` → Always; local (ko.local/kind.local) → Never; else IfNotPresent."""
    if "@sha256:" in image:
        return "IfNotPresent"
    if image.startswith(("ko.local/", "kind.local/")):
        return "Never"
    if image.rsplit("/", 1)[-1].endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def build_aiperf_job(
    run_id: str,
    namespace: str,
    endpoint: str,
    knobs: InferenceKnobs,
    gpu_count: int,
    image: str = AIPERF_IMAGE,
    image_pull_secrets: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The AIPerf Job manifest (CPU-only, tolerate-all, no nodeSelector)."""
    counts = aiperf_counts(knobs, gpu_count)
    return render_inference_template(
        "aiperf-job.yaml",
        job_name=aiperf_job_name(run_id),
        namespace=namespace,
        labels=run_labels(run_id),
        aiperf_image=image,
        image_pull_policy=image_pull_policy(image),
        image_pull_secrets=[dict(s) for s in image_pull_secrets],
        script=aiperf_script(endpoint, knobs, counts),
        model=knobs.model,
    )


# --- secrets -------------------------------------------------------------------------------------


def build_hf_token_secret(namespace: str, token: str, run_id: str) -> dict[str, Any]:
    """Opaque Secret ``aicr-hf-token`` (key ``token``).  Never print it; see :func:`printable_manifest`."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": HF_SECRET_NAME, "namespace": namespace, "labels": run_labels(run_id)},
        "type": "Opaque",
        "stringData": {HF_SECRET_KEY: token},
    }


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each secret (and its base64 form) with ``<redacted>``."""
    needles: set[str] = set()
    for s in secrets:
        if s:
            needles.add(s)
            needles.add(base64.b64encode(s.encode()).decode())
    for needle in sorted(needles, key=len, reverse=True):
        text = text.replace(needle, REDACTED)
    return text


def printable_manifest(obj: Mapping[str, Any], secrets: Iterable[str | None] = ()) -> str:
    """YAML of a manifest, safe to print: Secret ``data``/``stringData`` values blanked, secrets redacted."""
    copy = json.loads(json.dumps(obj))
    if copy.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if isinstance(copy.get(key), dict):
                copy[key] = dict.fromkeys(copy[key], REDACTED)
    return redact(yamlio.dump(copy), secrets)


# --- templates and the workload (performance spec §B.6) ------------------------------------------


def render_inference_template(name: str, **values: Any) -> dict[str, Any]:
    """Render ``runtimes/inference/<name>`` (via :mod:`aicr_pytest.core.templates`) into one YAML mapping."""
    docs = templates.render(f"{TEMPLATE_SUBDIR}/{name}", values)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise templates.TemplateRenderError(f"template {name!r} did not render to one YAML mapping")
    return docs[0]


def find_default_storage_class(storage_classes: Iterable[Mapping[str, Any]]) -> str | None:
    """Name of the StorageClass annotated default (GA or beta annotation), else ``None``."""
    keys = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
    for sc in storage_classes:
        annotations = (sc.get("metadata") or {}).get("annotations") or {}
        if any(annotations.get(k) == "true" for k in keys):
            return str((sc.get("metadata") or {}).get("name") or "")
    return None


def require_cache_storage(knobs: InferenceKnobs, storage_classes: Iterable[Mapping[str, Any]]) -> None:
    """Fail fast (exit 2) when the cache needs a default StorageClass the cluster does not have."""
    if (
        knobs.model_cache_enabled
        and knobs.model_cache_storage_class is None
        and find_default_storage_class(storage_classes) is None
    ):
        raise UsageError(MSG_NO_DEFAULT_STORAGE_CLASS)


def _is_gpu_component(component: Mapping[str, Any]) -> bool:
    return (
        component.get("type") in ("worker", "decode", "prefill")
        or component.get("name") == "VllmDecodeWorker"
    )


def _main_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod_spec.setdefault("containers", [])
    for c in containers:
        if c.get("name") == "main":
            return c
    main: dict[str, Any] = {"name": "main"}
    containers.append(main)
    return main


def apply_worker_scheduling(
    dgd: dict[str, Any],
    node: str,
    tolerations: Sequence[Mapping[str, str]],
    dra_wiring: bool,
    model_cache: bool,
) -> dict[str, Any]:
    """Pin every component to ``node`` by hostname and wire GPUs into the GPU components (in place)."""
    components = (dgd.get("spec") or {}).get("components")
    if not isinstance(components, list):
        raise InferenceFailure("DynamoGraphDeployment template has no spec.components list")
    for component in components:
        pod_spec: dict[str, Any] = component.setdefault("podTemplate", {}).setdefault("spec", {})
        pod_spec["nodeSelector"] = {HOSTNAME_LABEL: node}
        if tolerations:
            pod_spec["tolerations"] = [dict(t) for t in tolerations]
        if _is_gpu_component(component):
            main = _main_container(pod_spec)
            resources = main.setdefault("resources", {})
            if dra_wiring:
                pod_spec["resourceClaims"] = [
                    {"name": "gpu", "resourceClaimTemplateName": CLAIM_TEMPLATE_NAME}
                ]
                resources["claims"] = [{"name": "gpu"}]
            else:
                resources.setdefault("limits", {})[GPU_RESOURCE] = "1"
        if model_cache:
            volumes = pod_spec.setdefault("volumes", [])
            volumes.append(
                {
                    "name": "model-cache",
                    "persistentVolumeClaim": {"claimName": MODEL_CACHE_PVC, "readOnly": True},
                }
            )
            for c in pod_spec.get("containers") or []:
                c.setdefault("volumeMounts", []).append(
                    {"name": "model-cache", "mountPath": MODEL_CACHE_MOUNT, "readOnly": True}
                )
                env = c.get("env") or []
                env.extend(
                    [
                        {"name": "HF_HOME", "value": MODEL_CACHE_MOUNT},
                        {"name": "HF_HUB_OFFLINE", "value": "1"},
                    ]
                )
                c["env"] = env
    return dgd


def render_workload(
    run_id: str,
    knobs: InferenceKnobs,
    choice: NodeChoice,
    tolerations: Sequence[Mapping[str, str]],
    claim_api_version: str | None,
) -> list[dict[str, Any]]:
    """Every manifest of the workload namespace, in apply order (the HF Secret is built separately).

    Namespace → [model-cache PVC + populate Job] → KAI Queue → [DRA ResourceClaimTemplate] →
    DynamoGraphDeployment → [HTTPRoute for gateway-epp].
    """
    ns = workload_namespace(run_id)
    labels = run_labels(run_id)
    common: dict[str, Any] = {"namespace": ns, "labels": labels}
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
    ]
    if knobs.model_cache_size is not None:
        out.append(
            render_inference_template(
                "model-cache-pvc.yaml",
                **common,
                pvc_name=MODEL_CACHE_PVC,
                cache_size=knobs.model_cache_size,
                storage_class=knobs.model_cache_storage_class,
            )
        )
        job = render_inference_template(
            "model-cache-populate-job.yaml",
            **common,
            job_name=populate_job_name(run_id),
            pvc_name=MODEL_CACHE_PVC,
            runtime_image=RUNTIME_IMAGE,
            model=knobs.model,
            hf_secret_name=HF_SECRET_NAME,
        )
        pod_spec = job["spec"]["template"]["spec"]
        pod_spec["nodeSelector"] = {HOSTNAME_LABEL: choice.name}
        if tolerations:
            pod_spec["tolerations"] = [dict(t) for t in tolerations]
        out.append(job)
    out.append(render_inference_template("queue.yaml", **common, queue_name=QUEUE_NAME))
    if choice.dra_wiring:
        out.append(
            render_inference_template(
                "resource-claim-template.yaml",
                **common,
                claim_template_name=CLAIM_TEMPLATE_NAME,
                claim_api_version=claim_api_version or "v1",
            )
        )
    template = (
        "dynamo-deployment.yaml"
        if knobs.routing_mode == ROUTING_DYNAMO
        else "dynamo-deployment-gateway-epp.yaml"
    )
    dgd = render_inference_template(
        template,
        **common,
        deployment_name=DEPLOYMENT_NAME,
        model=knobs.model,
        gpu_count=choice.free_gpus,
        runtime_image=RUNTIME_IMAGE,
        epp_image=EPP_IMAGE,
        hf_secret_name=HF_SECRET_NAME,
        hf_token_env_names=list(HF_TOKEN_ENV_NAMES),
    )
    out.append(
        apply_worker_scheduling(dgd, choice.name, tolerations, choice.dra_wiring, knobs.model_cache_enabled)
    )
    if knobs.routing_mode == ROUTING_GATEWAY:
        out.append(
            render_inference_template(
                "http-route-gateway-epp.yaml",
                **common,
                route_name=HTTP_ROUTE_NAME,
                deployment_name=DEPLOYMENT_NAME,
                gateway_name=GATEWAY_NAME,
                gateway_namespace=GATEWAY_NAMESPACE,
            )
        )
    return out


# --- readiness (performance spec §B.6 step 7, §B.7) ----------------------------------------------


def dgd_ready(dgd: Mapping[str, Any]) -> bool:
    """``status.state == successful`` and every desired component has ready ≥ desired replicas."""
    status = dgd.get("status")
    if not isinstance(status, Mapping) or status.get("state") != "successful":
        return False
    spec = dgd.get("spec") or {}
    desired: dict[str, Any] = {}
    components = spec.get("components")
    if isinstance(components, list):
        desired = {str(c.get("name")): c for c in components if isinstance(c, Mapping)}
    elif isinstance(spec.get("services"), Mapping):
        desired = {str(k): v for k, v in spec["services"].items() if isinstance(v, Mapping)}
    observed = status.get("components")
    if not isinstance(observed, Mapping):
        observed = status.get("services")
    if not isinstance(observed, Mapping):
        observed = {}
    for cname, comp in desired.items():
        replicas = comp.get("replicas", 1)
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            return False
        if replicas < 1:
            continue
        entry = observed.get(cname)
        if not isinstance(entry, Mapping):
            return False
        ready = entry.get("readyReplicas", entry.get("availableReplicas"))
        if isinstance(ready, bool) or not isinstance(ready, int) or ready < replicas:
            return False
    return True


CHAT_PROBE_TIMEOUT_S: Final = 120.0
CHAT_PROBE_MAX_BODY: Final = 8 * 1024


def chat_probe_body(model: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def chat_completion_ready(status_code: int, body: bytes) -> bool:
    """HTTP 200, body ≤ 8 KiB, JSON with non-empty ``choices[0].message.content``."""
    if status_code != 200 or len(body) > CHAT_PROBE_MAX_BODY:
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False
    choices = data.get("choices") if isinstance(data, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return False
    message = choices[0].get("message")
    return (
        isinstance(message, Mapping) and isinstance(message.get("content"), str) and message["content"] != ""
    )
