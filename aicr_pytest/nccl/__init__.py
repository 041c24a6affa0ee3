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

The names callers outside the package use are re-exported here (``from aicr_pytest import nccl``;
``nccl.resolve_variant(...)``).  Each module's docstring lists its deliberate differences from AICR.
"""

from __future__ import annotations

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
