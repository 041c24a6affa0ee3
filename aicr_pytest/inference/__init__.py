"""inference-perf: the Dynamo inference benchmark check (performance spec §B).

The pure modules (plain values and Kubernetes-object dicts in, no cluster I/O, no pytest), in the
order of a run:

1. :mod:`.knobs` — guards A/B/C, comparators, knobs (:func:`preflight`, :func:`resolve_knobs`), the
   session-start :func:`prevalidate`, and the names the family shares.
2. :mod:`aicr_pytest.core.allocmode` (shared with other families) — the GPU allocation mode;
   :func:`aicr_pytest.kube.allocprobe.probe_allocation_mode` reads its inputs from the cluster.
3. :mod:`.nodes` — candidate nodes, GPU occupancy (fail closed), the worker node
   (:func:`select_worker_node`, :func:`wiring_evidence`).
4. :mod:`.render` — run-scoped names, the HF token Secret and redaction, the workload manifests
   (:func:`render_workload`), readiness (:func:`dgd_ready`, :func:`chat_completion_ready`).
5. :mod:`.aiperf` — the AIPerf Job (:func:`build_aiperf_job`) and its fail-closed output parser
   (:func:`parse_aiperf_output`).
6. :mod:`.verdict` — :func:`evaluate`: the measured values against the gates.

Around them:

* :mod:`.cluster` — the cluster I/O of a run (:class:`~aicr_pytest.inference.cluster.InferenceWorkload`).
* :mod:`.cli` — ``aicr-pytest parse aiperf FILE``.
* :mod:`.hooks` — the family's ``pytest_aicr_prevalidate`` hook.

The names callers outside the package use are re-exported here, lazily: each on first use
(``from aicr_pytest import inference as inf``; ``inf.resolve_knobs(...)``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time each name is imported on first use (start-up time)
    from aicr_pytest.inference.aiperf import (
        AIPERF_POD_TIMEOUT_S,
        AIPERF_RUN_TIMEOUT_S,
        MSG_AIPERF_FAILED,
        MSG_AIPERF_NO_END_SENTINEL,
        MSG_AIPERF_NO_POD,
        MSG_AIPERF_TIMEOUT,
        aiperf_counts,
        aiperf_script,
        build_aiperf_job,
        image_pull_policy,
        parse_aiperf_output,
        read_aiperf_metrics,
    )
    from aicr_pytest.inference.knobs import (
        CONSTRAINT_CONCURRENCY,
        CONSTRAINT_MODEL,
        CONSTRAINT_ROUTING,
        CONSTRAINT_THROUGHPUT,
        CONSTRAINT_TTFT,
        DEPLOYMENT_NAME,
        DGD_CRD,
        ENV_CACHE_SIZE,
        ENV_CACHE_STORAGE_CLASS,
        ENV_CONCURRENCY,
        ENV_HEALTH_TIMEOUT,
        ENV_HF_TOKEN,
        ENV_INPUT_TOKENS,
        ENV_MIN_REQUESTS,
        ENV_MODEL,
        ENV_NO_CLEANUP,
        ENV_OUTPUT_TOKENS,
        ENV_REQUESTS_PER_CONCURRENCY,
        ENV_WARMUP,
        ENV_WORKLOAD_READY_TIMEOUT,
        FRONTEND_SERVICE,
        GATEWAY_NAMESPACE,
        MODEL_CACHE_PVC,
        NAMESPACE_PREFIX,
        ROUTING_GATEWAY,
        InferenceFailure,
        InferenceKnobs,
        catalog_env,
        guard_dgd_crd,
        preflight,
        prevalidate,
        resolve_knobs,
    )
    from aicr_pytest.inference.nodes import (
        MSG_NO_DRA_CANDIDATES,
        GPUOccupancy,
        NodeChoice,
        count_used_gpus_by_node,
        discover_candidate_nodes,
        pod_effective_gpu_request,
        select_worker_node,
        wiring_evidence,
        worker_tolerations,
    )
    from aicr_pytest.inference.render import (
        CHAT_PROBE_TIMEOUT_S,
        MSG_CACHE_POPULATE_FAILED,
        MSG_CACHE_POPULATE_TIMEOUT,
        MSG_DGD_NOT_READY,
        MSG_ENDPOINT_TIMEOUT,
        MSG_NO_DEFAULT_STORAGE_CLASS,
        aiperf_job_name,
        apply_worker_scheduling,
        build_hf_token_secret,
        chat_completion_ready,
        chat_probe_body,
        derive_run_id,
        dgd_ready,
        find_default_storage_class,
        populate_job_name,
        printable_manifest,
        redact,
        render_workload,
        require_cache_storage,
        workload_namespace,
    )
    from aicr_pytest.inference.verdict import (
        RESULT_THROUGHPUT,
        RESULT_TTFT,
        evaluate,
        scaled_throughput_threshold,
    )

#: where each re-exported name lives: ``from aicr_pytest.inference import X`` imports only X's module
_LAZY: dict[str, str] = {
    "AIPERF_POD_TIMEOUT_S": "aicr_pytest.inference.aiperf",
    "AIPERF_RUN_TIMEOUT_S": "aicr_pytest.inference.aiperf",
    "MSG_AIPERF_FAILED": "aicr_pytest.inference.aiperf",
    "MSG_AIPERF_NO_END_SENTINEL": "aicr_pytest.inference.aiperf",
    "MSG_AIPERF_NO_POD": "aicr_pytest.inference.aiperf",
    "MSG_AIPERF_TIMEOUT": "aicr_pytest.inference.aiperf",
    "aiperf_counts": "aicr_pytest.inference.aiperf",
    "aiperf_script": "aicr_pytest.inference.aiperf",
    "build_aiperf_job": "aicr_pytest.inference.aiperf",
    "image_pull_policy": "aicr_pytest.inference.aiperf",
    "parse_aiperf_output": "aicr_pytest.inference.aiperf",
    "read_aiperf_metrics": "aicr_pytest.inference.aiperf",
    "CONSTRAINT_CONCURRENCY": "aicr_pytest.inference.knobs",
    "CONSTRAINT_MODEL": "aicr_pytest.inference.knobs",
    "CONSTRAINT_ROUTING": "aicr_pytest.inference.knobs",
    "CONSTRAINT_THROUGHPUT": "aicr_pytest.inference.knobs",
    "CONSTRAINT_TTFT": "aicr_pytest.inference.knobs",
    "DEPLOYMENT_NAME": "aicr_pytest.inference.knobs",
    "DGD_CRD": "aicr_pytest.inference.knobs",
    "ENV_CACHE_SIZE": "aicr_pytest.inference.knobs",
    "ENV_CACHE_STORAGE_CLASS": "aicr_pytest.inference.knobs",
    "ENV_CONCURRENCY": "aicr_pytest.inference.knobs",
    "ENV_HEALTH_TIMEOUT": "aicr_pytest.inference.knobs",
    "ENV_HF_TOKEN": "aicr_pytest.inference.knobs",
    "ENV_INPUT_TOKENS": "aicr_pytest.inference.knobs",
    "ENV_MIN_REQUESTS": "aicr_pytest.inference.knobs",
    "ENV_MODEL": "aicr_pytest.inference.knobs",
    "ENV_NO_CLEANUP": "aicr_pytest.inference.knobs",
    "ENV_OUTPUT_TOKENS": "aicr_pytest.inference.knobs",
    "ENV_REQUESTS_PER_CONCURRENCY": "aicr_pytest.inference.knobs",
    "ENV_WARMUP": "aicr_pytest.inference.knobs",
    "ENV_WORKLOAD_READY_TIMEOUT": "aicr_pytest.inference.knobs",
    "FRONTEND_SERVICE": "aicr_pytest.inference.knobs",
    "GATEWAY_NAMESPACE": "aicr_pytest.inference.knobs",
    "MODEL_CACHE_PVC": "aicr_pytest.inference.knobs",
    "NAMESPACE_PREFIX": "aicr_pytest.inference.knobs",
    "ROUTING_GATEWAY": "aicr_pytest.inference.knobs",
    "InferenceFailure": "aicr_pytest.inference.knobs",
    "InferenceKnobs": "aicr_pytest.inference.knobs",
    "catalog_env": "aicr_pytest.inference.knobs",
    "guard_dgd_crd": "aicr_pytest.inference.knobs",
    "preflight": "aicr_pytest.inference.knobs",
    "prevalidate": "aicr_pytest.inference.knobs",
    "resolve_knobs": "aicr_pytest.inference.knobs",
    "MSG_NO_DRA_CANDIDATES": "aicr_pytest.inference.nodes",
    "GPUOccupancy": "aicr_pytest.inference.nodes",
    "NodeChoice": "aicr_pytest.inference.nodes",
    "count_used_gpus_by_node": "aicr_pytest.inference.nodes",
    "discover_candidate_nodes": "aicr_pytest.inference.nodes",
    "pod_effective_gpu_request": "aicr_pytest.inference.nodes",
    "select_worker_node": "aicr_pytest.inference.nodes",
    "wiring_evidence": "aicr_pytest.inference.nodes",
    "worker_tolerations": "aicr_pytest.inference.nodes",
    "CHAT_PROBE_TIMEOUT_S": "aicr_pytest.inference.render",
    "MSG_CACHE_POPULATE_FAILED": "aicr_pytest.inference.render",
    "MSG_CACHE_POPULATE_TIMEOUT": "aicr_pytest.inference.render",
    "MSG_DGD_NOT_READY": "aicr_pytest.inference.render",
    "MSG_ENDPOINT_TIMEOUT": "aicr_pytest.inference.render",
    "MSG_NO_DEFAULT_STORAGE_CLASS": "aicr_pytest.inference.render",
    "aiperf_job_name": "aicr_pytest.inference.render",
    "apply_worker_scheduling": "aicr_pytest.inference.render",
    "build_hf_token_secret": "aicr_pytest.inference.render",
    "chat_completion_ready": "aicr_pytest.inference.render",
    "chat_probe_body": "aicr_pytest.inference.render",
    "derive_run_id": "aicr_pytest.inference.render",
    "dgd_ready": "aicr_pytest.inference.render",
    "find_default_storage_class": "aicr_pytest.inference.render",
    "populate_job_name": "aicr_pytest.inference.render",
    "printable_manifest": "aicr_pytest.inference.render",
    "redact": "aicr_pytest.inference.render",
    "render_workload": "aicr_pytest.inference.render",
    "require_cache_storage": "aicr_pytest.inference.render",
    "workload_namespace": "aicr_pytest.inference.render",
    "RESULT_THROUGHPUT": "aicr_pytest.inference.verdict",
    "RESULT_TTFT": "aicr_pytest.inference.verdict",
    "evaluate": "aicr_pytest.inference.verdict",
    "scaled_throughput_threshold": "aicr_pytest.inference.verdict",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AIPERF_POD_TIMEOUT_S",
    "AIPERF_RUN_TIMEOUT_S",
    "CHAT_PROBE_TIMEOUT_S",
    "CONSTRAINT_CONCURRENCY",
    "CONSTRAINT_MODEL",
    "CONSTRAINT_ROUTING",
    "CONSTRAINT_THROUGHPUT",
    "CONSTRAINT_TTFT",
    "DEPLOYMENT_NAME",
    "DGD_CRD",
    "ENV_CACHE_SIZE",
    "ENV_CACHE_STORAGE_CLASS",
    "ENV_CONCURRENCY",
    "ENV_HEALTH_TIMEOUT",
    "ENV_HF_TOKEN",
    "ENV_INPUT_TOKENS",
    "ENV_MIN_REQUESTS",
    "ENV_MODEL",
    "ENV_NO_CLEANUP",
    "ENV_OUTPUT_TOKENS",
    "ENV_REQUESTS_PER_CONCURRENCY",
    "ENV_WARMUP",
    "ENV_WORKLOAD_READY_TIMEOUT",
    "FRONTEND_SERVICE",
    "GATEWAY_NAMESPACE",
    "MODEL_CACHE_PVC",
    "MSG_AIPERF_FAILED",
    "MSG_AIPERF_NO_END_SENTINEL",
    "MSG_AIPERF_NO_POD",
    "MSG_AIPERF_TIMEOUT",
    "MSG_CACHE_POPULATE_FAILED",
    "MSG_CACHE_POPULATE_TIMEOUT",
    "MSG_DGD_NOT_READY",
    "MSG_ENDPOINT_TIMEOUT",
    "MSG_NO_DEFAULT_STORAGE_CLASS",
    "MSG_NO_DRA_CANDIDATES",
    "NAMESPACE_PREFIX",
    "RESULT_THROUGHPUT",
    "RESULT_TTFT",
    "ROUTING_GATEWAY",
    "GPUOccupancy",
    "InferenceFailure",
    "InferenceKnobs",
    "NodeChoice",
    "aiperf_counts",
    "aiperf_job_name",
    "aiperf_script",
    "apply_worker_scheduling",
    "build_aiperf_job",
    "build_hf_token_secret",
    "catalog_env",
    "chat_completion_ready",
    "chat_probe_body",
    "count_used_gpus_by_node",
    "derive_run_id",
    "dgd_ready",
    "discover_candidate_nodes",
    "evaluate",
    "find_default_storage_class",
    "guard_dgd_crd",
    "image_pull_policy",
    "parse_aiperf_output",
    "pod_effective_gpu_request",
    "populate_job_name",
    "preflight",
    "prevalidate",
    "printable_manifest",
    "read_aiperf_metrics",
    "redact",
    "render_workload",
    "require_cache_storage",
    "resolve_knobs",
    "scaled_throughput_threshold",
    "select_worker_node",
    "wiring_evidence",
    "worker_tolerations",
    "workload_namespace",
]
