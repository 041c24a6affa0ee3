"""The inference-service half of ``ai-service-metrics``: which inference workload runs, and which
Prometheus series prove its metrics are scraped (plain functions; the check orchestrates them).

Detection, in this order (AICR's evidence collector's ``service-metrics`` rules):

* **Dynamo** -- any pod (any phase) in ``dynamo-workload`` labelled
  ``nvidia.com/dynamo-component-type=worker`` (frontends there are named in the evidence; a
  frontend alone is not a served model). Its series: every ``dynamo_*`` series of the Dynamo
  PodMonitors' jobs, ``{job=~"dynamo-system/dynamo-.*",__name__=~"dynamo_.*"}``.
* **NIM** -- pods in ``nim-workload`` labelled ``app.kubernetes.io/managed-by=k8s-nim-operator``.
  Its series: NIM's token and latency metrics in that namespace (:data:`NIM_QUERY`).
* otherwise no inference service: the check keeps its GPU-series and custom-metrics verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DYNAMO_COMPONENT_LABEL",
    "DYNAMO_NAMESPACE",
    "DYNAMO_QUERY",
    "DYNAMO_SELECTOR",
    "NIM_NAMESPACE",
    "NIM_QUERY",
    "NIM_SELECTOR",
    "NO_WORKLOAD",
    "InferenceWorkload",
    "detect_workload",
    "series_names",
    "series_report",
]

DYNAMO_NAMESPACE: Final = "dynamo-workload"
DYNAMO_COMPONENT_LABEL: Final = "nvidia.com/dynamo-component-type"
#: worker and frontend pods in one list (detection needs a worker)
DYNAMO_SELECTOR: Final = f"{DYNAMO_COMPONENT_LABEL} in (worker,frontend)"
DYNAMO_QUERY: Final = '{job=~"dynamo-system/dynamo-.*",__name__=~"dynamo_.*"}'
NIM_NAMESPACE: Final = "nim-workload"
NIM_SELECTOR: Final = "app.kubernetes.io/managed-by=k8s-nim-operator"
NIM_QUERY: Final = (
    f'{{namespace="{NIM_NAMESPACE}",__name__=~"prompt_tokens_total|generation_tokens_total|'
    'time_to_first_token_seconds_.*|e2e_request_latency_seconds_.*"}'
)
#: the evidence when neither workload runs
NO_WORKLOAD: Final = (
    f"no inference service found (no Dynamo worker pod in {DYNAMO_NAMESPACE}, no NIM pod in "
    f"{NIM_NAMESPACE}): only the GPU time series and the custom metrics API were checked"
)


@dataclass(frozen=True)
class InferenceWorkload:
    """The detected inference service: ``kind`` (``Dynamo``/``NIM``), where, its pods, its query."""

    kind: str
    namespace: str
    pods: tuple[str, ...]
    query: str
    frontends: tuple[str, ...] = ()

    def describe(self) -> str:
        """``Dynamo in dynamo-workload (worker pods: a, b; frontend pods: c)``."""
        role = "worker pods" if self.kind == "Dynamo" else "pods"
        parts = [f"{role}: {', '.join(self.pods)}"]
        if self.frontends:
            parts.append(f"frontend pods: {', '.join(self.frontends)}")
        return f"{self.kind} in {self.namespace} ({'; '.join(parts)})"


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def _component(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(DYNAMO_COMPONENT_LABEL) or "")


def detect_workload(
    dynamo_pods: Sequence[Mapping[str, Any]], nim_pods: Sequence[Mapping[str, Any]]
) -> InferenceWorkload | None:
    """Dynamo (a worker pod) before NIM (an operator-managed pod); ``None`` when neither runs."""
    workers = sorted(_name(p) for p in dynamo_pods if _component(p) == "worker")
    if workers:
        frontends = sorted(_name(p) for p in dynamo_pods if _component(p) == "frontend")
        return InferenceWorkload("Dynamo", DYNAMO_NAMESPACE, tuple(workers), DYNAMO_QUERY, tuple(frontends))
    nim = sorted(_name(p) for p in nim_pods)
    if nim:
        return InferenceWorkload("NIM", NIM_NAMESPACE, tuple(nim), NIM_QUERY)
    return None


def series_names(result: Sequence[Any]) -> list[str]:
    """The distinct ``__name__`` labels of a query's instant vector, sorted."""
    names = {
        str(s["metric"]["__name__"])
        for s in result
        if isinstance(s, Mapping) and isinstance(s.get("metric"), Mapping) and s["metric"].get("__name__")
    }
    return sorted(names)


def series_report(workload: InferenceWorkload, status: str, result: Sequence[Any], sample: int = 5) -> str:
    """The ``Inference-service metrics`` evidence: workload, query, series count, sample of names."""
    names = series_names(result)
    lines = [
        f"Workload: {workload.describe()}",
        f"Query: {workload.query}",
        f"Status: {status}",
        f"Time series count: {len(result)}",
    ]
    if result:
        shown = ", ".join(names[:sample]) + (
            f" (and {len(names) - sample} more)" if len(names) > sample else ""
        )
        lines.append(f"Metric names: {shown}")
    return "\n".join(lines)
