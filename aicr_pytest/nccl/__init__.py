"""NCCL all-reduce bandwidth checks: ``nccl-all-reduce-bw`` (default variant),
``nccl-all-reduce-bw-net`` and ``nccl-all-reduce-bw-nvls``.

The pure modules (no cluster I/O, no pytest), in the order a check uses them:

1. :mod:`.variant` — variant resolution (:func:`resolve_variant` → :class:`VariantPlan`), the
   check, constraint and object names, the session-start :func:`prevalidate`.
2. :mod:`.sizing` — worker discovery, sizing and scheduling (:func:`select_target_nodes`,
   :func:`size_workers`, :func:`worker_scheduling`).
3. :mod:`.render` — the benchmark objects (:func:`render_benchmark`, :func:`build_compute_domain`).
4. :mod:`.parse` — the streaming, fail-closed launcher-log parser (:func:`parse_all_reduce`,
   :class:`NcclParseError`).
5. :mod:`.verdict` — the transport rule, the threshold, the reported lines (:func:`verify_transport`,
   :func:`evaluate`, :func:`sweep_plot`).

Around them:

* :mod:`.cluster` — the cluster I/O of a run (:class:`~aicr_pytest.nccl.cluster.NcclBenchmark`).
* :mod:`.plot` — a dependency-free SVG plot of the sweep.
* :mod:`.cli` — ``aicr-pytest parse nccl LOGFILE``.
* :mod:`.hooks` — the family's ``pytest_aicr_prevalidate`` hook.

The names callers outside the package use are re-exported here, lazily (``from aicr_pytest import nccl``;
``nccl.resolve_variant(...)``).  Each module's docstring lists its deliberate differences from AICR.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time each name is imported on first use (start-up time)
    from aicr_pytest.nccl.parse import (
        DIAGNOSTIC_LABEL,
        DIAGNOSTIC_TAIL_LINES,
        MSG_OUT_OF_BOUNDS,
        MSG_PARSE_FAILED,
        MSG_REJECTED_ROWS,
        MSG_TABLE_TRUNCATED_SWEEP,
        AllReduceLogScanner,
        NcclParseError,
        NcclResult,
        SweepRow,
        TransportInfo,
        parse_all_reduce,
        parse_all_reduce_file,
        parse_all_reduce_stream,
        parse_row,
    )
    from aicr_pytest.nccl.render import (
        BenchmarkNames,
        BenchmarkObjects,
        RenderInputs,
        apply_worker_scheduling,
        benchmark_names,
        build_compute_domain,
        render_benchmark,
    )
    from aicr_pytest.nccl.sizing import (
        EFA_RESOURCE,
        MAX_MESSAGE_SIZE,
        MSG_GKE_MIXED_ACCELERATOR,
        RDMA_RESOURCE,
        WorkerScheduling,
        WorkerSizing,
        gke_network_interfaces,
        max_message_size,
        node_name,
        nvreg_override_set,
        platform_worker_scheduling,
        select_target_nodes,
        size_workers,
        uniform_fabric_count,
        worker_scheduling,
    )
    from aicr_pytest.nccl.variant import (
        CHECK_DEFAULT,
        CHECK_NET,
        CHECK_NVLS,
        CHECK_VARIANTS,
        KNOWN_PROFILES,
        LAUNCHER_JOB,
        MSG_RUNTIME_AND_PROFILE,
        MSG_RUNTIME_BAD_SELECTOR,
        MSG_RUNTIME_NO_NODE_JOB,
        MSG_RUNTIME_NO_POD_SPEC,
        NODE_JOB,
        ROCE_CLAIM_TEMPLATE,
        ROCE_NET_SERVICES,
        SUPPORTED_COMBINATIONS,
        Criteria,
        NcclCheckFailure,
        Threshold,
        Variant,
        VariantPlan,
        parse_fabric,
        parse_threshold,
        prevalidate,
        resolve_runtime_ref,
        resolve_variant,
        template_path,
        validate_private_runtime,
    )
    from aicr_pytest.nccl.verdict import (
        MSG_NET_NO_BANNER,
        MSG_NET_SOCKET,
        MSG_NVLS_NO_COMM,
        MSG_NVLS_NOT_AVAILABLE,
        TransportError,
        Verdict,
        evaluate,
        sweep_plot,
        verify_transport,
    )

#: where each re-exported name lives: ``from aicr_pytest.nccl import X`` imports only X's module
_LAZY: dict[str, str] = {
    "DIAGNOSTIC_LABEL": "aicr_pytest.nccl.parse",
    "DIAGNOSTIC_TAIL_LINES": "aicr_pytest.nccl.parse",
    "MSG_OUT_OF_BOUNDS": "aicr_pytest.nccl.parse",
    "MSG_PARSE_FAILED": "aicr_pytest.nccl.parse",
    "MSG_REJECTED_ROWS": "aicr_pytest.nccl.parse",
    "MSG_TABLE_TRUNCATED_SWEEP": "aicr_pytest.nccl.parse",
    "AllReduceLogScanner": "aicr_pytest.nccl.parse",
    "NcclParseError": "aicr_pytest.nccl.parse",
    "NcclResult": "aicr_pytest.nccl.parse",
    "SweepRow": "aicr_pytest.nccl.parse",
    "TransportInfo": "aicr_pytest.nccl.parse",
    "parse_all_reduce": "aicr_pytest.nccl.parse",
    "parse_all_reduce_file": "aicr_pytest.nccl.parse",
    "parse_all_reduce_stream": "aicr_pytest.nccl.parse",
    "parse_row": "aicr_pytest.nccl.parse",
    "BenchmarkNames": "aicr_pytest.nccl.render",
    "BenchmarkObjects": "aicr_pytest.nccl.render",
    "RenderInputs": "aicr_pytest.nccl.render",
    "apply_worker_scheduling": "aicr_pytest.nccl.render",
    "benchmark_names": "aicr_pytest.nccl.render",
    "build_compute_domain": "aicr_pytest.nccl.render",
    "render_benchmark": "aicr_pytest.nccl.render",
    "EFA_RESOURCE": "aicr_pytest.nccl.sizing",
    "MAX_MESSAGE_SIZE": "aicr_pytest.nccl.sizing",
    "MSG_GKE_MIXED_ACCELERATOR": "aicr_pytest.nccl.sizing",
    "RDMA_RESOURCE": "aicr_pytest.nccl.sizing",
    "WorkerScheduling": "aicr_pytest.nccl.sizing",
    "WorkerSizing": "aicr_pytest.nccl.sizing",
    "gke_network_interfaces": "aicr_pytest.nccl.sizing",
    "max_message_size": "aicr_pytest.nccl.sizing",
    "node_name": "aicr_pytest.nccl.sizing",
    "nvreg_override_set": "aicr_pytest.nccl.sizing",
    "platform_worker_scheduling": "aicr_pytest.nccl.sizing",
    "select_target_nodes": "aicr_pytest.nccl.sizing",
    "size_workers": "aicr_pytest.nccl.sizing",
    "uniform_fabric_count": "aicr_pytest.nccl.sizing",
    "worker_scheduling": "aicr_pytest.nccl.sizing",
    "CHECK_DEFAULT": "aicr_pytest.nccl.variant",
    "CHECK_NET": "aicr_pytest.nccl.variant",
    "CHECK_NVLS": "aicr_pytest.nccl.variant",
    "CHECK_VARIANTS": "aicr_pytest.nccl.variant",
    "KNOWN_PROFILES": "aicr_pytest.nccl.variant",
    "LAUNCHER_JOB": "aicr_pytest.nccl.variant",
    "MSG_RUNTIME_AND_PROFILE": "aicr_pytest.nccl.variant",
    "MSG_RUNTIME_BAD_SELECTOR": "aicr_pytest.nccl.variant",
    "MSG_RUNTIME_NO_NODE_JOB": "aicr_pytest.nccl.variant",
    "MSG_RUNTIME_NO_POD_SPEC": "aicr_pytest.nccl.variant",
    "NODE_JOB": "aicr_pytest.nccl.variant",
    "ROCE_CLAIM_TEMPLATE": "aicr_pytest.nccl.variant",
    "ROCE_NET_SERVICES": "aicr_pytest.nccl.variant",
    "SUPPORTED_COMBINATIONS": "aicr_pytest.nccl.variant",
    "Criteria": "aicr_pytest.nccl.variant",
    "NcclCheckFailure": "aicr_pytest.nccl.variant",
    "Threshold": "aicr_pytest.nccl.variant",
    "Variant": "aicr_pytest.nccl.variant",
    "VariantPlan": "aicr_pytest.nccl.variant",
    "parse_fabric": "aicr_pytest.nccl.variant",
    "parse_threshold": "aicr_pytest.nccl.variant",
    "prevalidate": "aicr_pytest.nccl.variant",
    "resolve_runtime_ref": "aicr_pytest.nccl.variant",
    "resolve_variant": "aicr_pytest.nccl.variant",
    "template_path": "aicr_pytest.nccl.variant",
    "validate_private_runtime": "aicr_pytest.nccl.variant",
    "MSG_NET_NO_BANNER": "aicr_pytest.nccl.verdict",
    "MSG_NET_SOCKET": "aicr_pytest.nccl.verdict",
    "MSG_NVLS_NO_COMM": "aicr_pytest.nccl.verdict",
    "MSG_NVLS_NOT_AVAILABLE": "aicr_pytest.nccl.verdict",
    "TransportError": "aicr_pytest.nccl.verdict",
    "Verdict": "aicr_pytest.nccl.verdict",
    "evaluate": "aicr_pytest.nccl.verdict",
    "sweep_plot": "aicr_pytest.nccl.verdict",
    "verify_transport": "aicr_pytest.nccl.verdict",
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
    "CHECK_DEFAULT",
    "CHECK_NET",
    "CHECK_NVLS",
    "CHECK_VARIANTS",
    "DIAGNOSTIC_LABEL",
    "DIAGNOSTIC_TAIL_LINES",
    "EFA_RESOURCE",
    "KNOWN_PROFILES",
    "LAUNCHER_JOB",
    "MAX_MESSAGE_SIZE",
    "MSG_GKE_MIXED_ACCELERATOR",
    "MSG_NET_NO_BANNER",
    "MSG_NET_SOCKET",
    "MSG_NVLS_NOT_AVAILABLE",
    "MSG_NVLS_NO_COMM",
    "MSG_OUT_OF_BOUNDS",
    "MSG_PARSE_FAILED",
    "MSG_REJECTED_ROWS",
    "MSG_RUNTIME_AND_PROFILE",
    "MSG_RUNTIME_BAD_SELECTOR",
    "MSG_RUNTIME_NO_NODE_JOB",
    "MSG_RUNTIME_NO_POD_SPEC",
    "MSG_TABLE_TRUNCATED_SWEEP",
    "NODE_JOB",
    "RDMA_RESOURCE",
    "ROCE_CLAIM_TEMPLATE",
    "ROCE_NET_SERVICES",
    "SUPPORTED_COMBINATIONS",
    "AllReduceLogScanner",
    "BenchmarkNames",
    "BenchmarkObjects",
    "Criteria",
    "NcclCheckFailure",
    "NcclParseError",
    "NcclResult",
    "RenderInputs",
    "SweepRow",
    "Threshold",
    "TransportError",
    "TransportInfo",
    "Variant",
    "VariantPlan",
    "Verdict",
    "WorkerScheduling",
    "WorkerSizing",
    "apply_worker_scheduling",
    "benchmark_names",
    "build_compute_domain",
    "evaluate",
    "gke_network_interfaces",
    "max_message_size",
    "node_name",
    "nvreg_override_set",
    "parse_all_reduce",
    "parse_all_reduce_file",
    "parse_all_reduce_stream",
    "parse_fabric",
    "parse_row",
    "parse_threshold",
    "platform_worker_scheduling",
    "prevalidate",
    "render_benchmark",
    "resolve_runtime_ref",
    "resolve_variant",
    "select_target_nodes",
    "size_workers",
    "sweep_plot",
    "template_path",
    "uniform_fabric_count",
    "validate_private_runtime",
    "verify_transport",
    "worker_scheduling",
]
