"""AICR's structured CTRF ``extra`` keys and their closed sets of codes (no logic beyond lookups).

Today's AICR puts a few low-cardinality values on a test's ``extra`` so they survive its minimal
evidence redaction (``pkg/validator/ctrf/types.go``, ``pkg/evidence/redact/redact.go``):

* ``skipReason`` on a skipped test: why it skipped, one of :data:`SKIP_REASONS`;
* ``runtimeSource`` on an NCCL benchmark: where the measured TrainingRuntime came from, one of
  :data:`RUNTIME_SOURCES`.

A code is written only where the condition is exactly the one the code names; a skip AICR gives
no code (``--fail-fast``, ``--no-cluster``, a failed readiness pre-flight) gets none here either.
"""

from __future__ import annotations

from typing import Final

KEY_SKIP_REASON: Final = "skipReason"
KEY_RUNTIME_SOURCE: Final = "runtimeSource"

#: the cluster has no GPU nodes at all (``check-nvidia-smi``)
SKIP_NO_GPU_NODES: Final = "no-gpu-nodes"
#: GPU nodes exist, but every one is cordoned (``check-nvidia-smi``)
SKIP_NO_SCHEDULABLE_GPU_NODES: Final = "no-schedulable-gpu-nodes"
#: schedulable GPU nodes exist, and at least one is confirmed busy with a GPU workload
SKIP_NODES_BUSY: Final = "nodes-busy"
#: the caller withheld the check (``--skip-check`` / ``spec.validate.execution.skipChecks``)
SKIP_NAMED_IN_SKIP_CHECKS: Final = "named-in-skip-checks"
SKIP_REASONS: Final = frozenset(
    {SKIP_NO_GPU_NODES, SKIP_NO_SCHEDULABLE_GPU_NODES, SKIP_NODES_BUSY, SKIP_NAMED_IN_SKIP_CHECKS}
)

#: the benchmark ran the validator's own embedded TrainingRuntime (it proves the fabric)
RUNTIME_CLUSTER_CAPABILITY: Final = "cluster-capability"
#: the recipe supplied the runtime (``nccl-benchmark-runtime`` / ``nccl-benchmark-runtime-ref``)
RUNTIME_RECIPE_SUPPLIED: Final = "recipe-supplied-runtime"
#: a runtime derived from the ClusterTrainingRuntime the recipe ships (AICR only; never written here)
RUNTIME_DELIVERED_ARTIFACT: Final = "delivered-artifact"
RUNTIME_SOURCES: Final = frozenset(
    {RUNTIME_CLUSTER_CAPABILITY, RUNTIME_RECIPE_SUPPLIED, RUNTIME_DELIVERED_ARTIFACT}
)


def skip_extra(code: str | None) -> dict[str, str]:
    """The ``extra`` entries of a skip with ``code`` (none for ``None`` or a code AICR does not mint)."""
    return {KEY_SKIP_REASON: code} if code in SKIP_REASONS else {}


__all__ = [
    "KEY_RUNTIME_SOURCE",
    "KEY_SKIP_REASON",
    "RUNTIME_CLUSTER_CAPABILITY",
    "RUNTIME_DELIVERED_ARTIFACT",
    "RUNTIME_RECIPE_SUPPLIED",
    "RUNTIME_SOURCES",
    "SKIP_NAMED_IN_SKIP_CHECKS",
    "SKIP_NODES_BUSY",
    "SKIP_NO_GPU_NODES",
    "SKIP_NO_SCHEDULABLE_GPU_NODES",
    "SKIP_REASONS",
    "skip_extra",
]
