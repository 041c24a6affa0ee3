"""inference-perf inputs (step 1 of a run): guards, comparators, knobs, preflight and prevalidation.

:func:`preflight` runs guard A (no throughput/TTFT constraint: skip), the comparator and knob
validation (:func:`resolve_knobs`: a bad value is a :class:`~aicr_pytest.core.errors.UsageError`,
exit 2, before anything is deployed) and guard B (no ``dynamo-platform``: skip);
:func:`guard_dgd_crd` is guard C on the CRD lookup.  :func:`prevalidate` runs the same validation
at session start (the ``pytest_aicr_prevalidate`` hook in :mod:`.hooks`).

Also here: the check's names, object names, images and knob defaults every other module of the
family shares, and :class:`InferenceFailure`.

Secrets: the HF token lives only in :class:`InferenceKnobs` (hidden from ``repr``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Protocol

from aicr_pytest.core import goduration
from aicr_pytest.core.allocmode import parse_quantity
from aicr_pytest.core.datatree import CATALOG_PATH
from aicr_pytest.core.errors import CheckFailed, CheckSkip, Inconclusive, UsageError
from aicr_pytest.core.gofmt import go_atoi, go_quote, parse_go_bool

# --- names ---------------------------------------------------------------
CHECK_NAME: Final = "inference-perf"
DYNAMO_COMPONENT: Final = "dynamo-platform"
DGD_CRD: Final = "dynamographdeployments.nvidia.com"
CONSTRAINT_THROUGHPUT: Final = "inference-throughput"
CONSTRAINT_TTFT: Final = "inference-ttft-p99"
CONSTRAINT_MODEL: Final = "inference-model"
CONSTRAINT_CONCURRENCY: Final = "inference-concurrency-per-gpu"
CONSTRAINT_ROUTING: Final = "inference-routing-mode"
CONSTRAINT_CACHE_STORAGE_CLASS: Final = "inference-model-cache-storage-class"

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
#: the Dynamo frontend strategies (``DYN_ROUTER_MODE``) the benchmark supports, in upstream's order
#: (Dynamo's ``direct`` needs per-request worker ids the benchmark never sends)
ROUTER_MODES: Final = ("kv", "round-robin", "random", "power-of-two", "least-loaded", "device-aware-weighted")

# --- knob names and defaults ---------------------------------------------
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
ENV_ROUTER_MODE: Final = "AICR_INFERENCE_PERF_ROUTER_MODE"
ENV_HF_TOKEN: Final = "HF_TOKEN"
#: Only these two come from the shell running aicr-pytest; catalog entries with these names are ignored.
SHELL_ONLY_ENV: Final = frozenset({ENV_NO_CLEANUP, ENV_HF_TOKEN})

DEFAULT_MODEL: Final = "Qwen/Qwen3-8B"
DEFAULT_CONCURRENCY_PER_GPU: Final = 256
DEFAULT_ROUTING_MODE: Final = ROUTING_DYNAMO
DEFAULT_ROUTER_MODE: Final = "least-loaded"
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
MSG_INVALID_ROUTER_MODE: Final = (
    "invalid " + ENV_ROUTER_MODE + " {value}: must be one of " + ", ".join(ROUTER_MODES)
)
MSG_INVALID_STORAGE_CLASS: Final = (
    'invalid {name}="{value}": must be a StorageClass name (lowercase letters, digits, "-" and ".", '
    "at most 253 characters, starting and ending with a letter or digit)"
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

MSG_CATALOG_ENV: Final = (
    "validators/catalog.yaml: the inference-perf entry's env must be a list of {{name, value}} entries "
    "(got {got})"
)


class InferenceFailure(CheckFailed):
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


# --- guards --------------------------------------------------------------


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


# --- thresholds and comparators -----------------------------------

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


# --- knobs ---------------------------------------------------------------

_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


def parse_go_duration(text: str) -> float | None:
    """``time.ParseDuration`` in seconds (``"90s"``, ``"1h30m"``, ``"1.5h"``); invalid → ``None``.

    Go does not trim, so surrounding whitespace is invalid here (the core parser trims)."""
    if text != text.strip():
        return None
    try:
        return goduration.parse_go_duration(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class InferenceKnobs:
    """Resolved inputs of one inference-perf run (recipe > catalog env > default)."""

    model: str = DEFAULT_MODEL
    concurrency_per_gpu: int = DEFAULT_CONCURRENCY_PER_GPU
    routing_mode: str = DEFAULT_ROUTING_MODE
    #: the Dynamo frontend's ``DYN_ROUTER_MODE`` (consumed on the ``dynamo-router`` path only)
    router_mode: str = DEFAULT_ROUTER_MODE
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


#: a Kubernetes object name that is a DNS-1123 subdomain (what a StorageClass's name must be)
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def resolve_router_mode(env: Mapping[str, str]) -> str:
    """``AICR_INFERENCE_PERF_ROUTER_MODE`` (trimmed) from the catalog env, else least-loaded; any value
    outside :data:`ROUTER_MODES` is a usage error, in either routing mode."""
    raw = (env.get(ENV_ROUTER_MODE) or "").strip()
    if not raw:
        return DEFAULT_ROUTER_MODE
    if raw not in ROUTER_MODES:
        raise UsageError(MSG_INVALID_ROUTER_MODE.format(value=go_quote(raw)))
    return raw


def cache_storage_class(constraints: Iterable[ConstraintLike], env: Mapping[str, str]) -> str | None:
    """The model cache's StorageClass: the ``inference-model-cache-storage-class`` recipe constraint,
    else ``AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS`` from the catalog env, else ``None`` (the
    cluster's default StorageClass).  Blank means unset; a value that cannot name a StorageClass is
    a usage error."""
    for name, raw in (
        (CONSTRAINT_CACHE_STORAGE_CLASS, find_constraint(constraints, CONSTRAINT_CACHE_STORAGE_CLASS)),
        (ENV_CACHE_STORAGE_CLASS, env.get(ENV_CACHE_STORAGE_CLASS)),
    ):
        value = (raw or "").strip()
        if not value:
            continue
        if len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
            raise UsageError(MSG_INVALID_STORAGE_CLASS.format(name=name, value=raw))
        return value
    return None


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
    storage_class = cache_storage_class(items, env)

    return InferenceKnobs(
        model=model,
        concurrency_per_gpu=concurrency,
        routing_mode=routing,
        router_mode=resolve_router_mode(env),
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
