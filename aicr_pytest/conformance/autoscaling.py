"""What ``pod-autoscaling`` and ``cluster-autoscaling`` share: the
external GPU metric both HPAs scale on, the HPA manifest, the metrics-API reads, and the bounded
watch-based waits.

Waits are watches (:func:`aicr_pytest.kube.wait.observe`) on the check's clock, bounded by AICR's
timeout and by the check's own deadline: the cluster not doing what the test asks within AICR's
bound fails the check with AICR's ``[TIMEOUT] …`` text (the autoscaling pipeline under test is
broken); the check's deadline cutting a wait short is ``other``. The metrics APIs are read through
the API server, one request per attempt (:func:`~aicr_pytest.conformance.endpoints.api_get`),
retried every 10 s where AICR retries them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aicr_pytest.conformance.common import failure, format_go_duration, inconclusive
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.endpoints import api_error_text, api_get
from aicr_pytest.kube.errors import ApiError, ObjectVanished, WaitTimeout
from aicr_pytest.kube.rawhttp import RawResponse
from aicr_pytest.kube.transport import Target
from aicr_pytest.kube.wait import observe

__all__ = [
    "CUSTOM_METRICS_PATH",
    "DEPLOYMENT_SCALE_TIMEOUT_S",
    "EXTERNAL_METRIC",
    "EXTERNAL_METRIC_TARGET",
    "HPA_POLL_INTERVAL_S",
    "HPA_SCALE_TIMEOUT_S",
    "METRICS_WARMUP_TIMEOUT_S",
    "MSG_HPA_NO_INTENT",
    "Attempt",
    "external_metric_path",
    "hpa_manifest",
    "hpa_replicas",
    "metric_items",
    "retry_metrics_api",
    "wait_for_view",
    "wait_scaling_intent",
]

EXTERNAL_METRIC = "dcgm_gpu_power_usage"
EXTERNAL_METRIC_TARGET = "10"
CUSTOM_METRICS_PATH = "/apis/custom.metrics.k8s.io/v1beta1"
#: AICR's pkg/defaults, seconds
METRICS_WARMUP_TIMEOUT_S = 60.0
HPA_POLL_INTERVAL_S = 10.0
HPA_SCALE_TIMEOUT_S = 180.0
DEPLOYMENT_SCALE_TIMEOUT_S = 120.0

MSG_HPA_NO_INTENT = "HPA did not report scaling intent within timeout — metrics pipeline may be broken"

JSON = dict[str, Any]
T = TypeVar("T")


def external_metric_path(namespace: str, metric: str = EXTERNAL_METRIC) -> str:
    return f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{metric}"


def external_metric_target(namespace: str, metric: str = EXTERNAL_METRIC) -> Target:
    """RBAC view of the external-metric read: ``list <metric>.external.metrics.k8s.io``."""
    return Target("list", "external.metrics.k8s.io", metric, namespace)


def hpa_manifest(name: str, namespace: str, *, max_replicas: int, scale_down_window: int | None) -> JSON:
    """An ``autoscaling/v2`` HPA of Deployment ``name`` on the cluster-wide external GPU metric."""
    hpa: JSON = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": EXTERNAL_METRIC},
                        "target": {"type": "AverageValue", "averageValue": EXTERNAL_METRIC_TARGET},
                    },
                }
            ],
        },
    }
    if scale_down_window is not None:
        hpa["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": scale_down_window}}
    return hpa


def hpa_replicas(hpa: Mapping[str, Any]) -> tuple[int, int]:
    """(desired, current) of an HPA's status (absent reads 0)."""
    st = hpa.get("status") or {}
    return int(st.get("desiredReplicas") or 0), int(st.get("currentReplicas") or 0)


def metric_items(raw: RawResponse) -> list[Any]:
    """``items`` of a ``MetricValueList``/``ExternalMetricValueList`` (unparsable reads as none)."""
    try:
        doc = json.loads(raw.body)
    except ValueError:
        return []
    items = doc.get("items") if isinstance(doc, dict) else None
    return list(items) if isinstance(items, list) else []


@dataclass(frozen=True)
class Attempt:
    """One metrics-API attempt: the answer when it counts as success, else why not."""

    raw: RawResponse | None
    error: str


def retry_metrics_api(
    ctx: ConformanceContext,
    path: str,
    target: Target,
    accept: Callable[[RawResponse], str | None],
    *,
    timeout: float = METRICS_WARMUP_TIMEOUT_S,
) -> Attempt:
    """GET ``path`` at once, then every 10 s for at most ``timeout`` until ``accept(raw)`` is
    ``None`` (``accept`` returns why an answer does not count). Returns the last attempt; the caller
    says what a failure means. The check's deadline cutting the retries short is ``other``."""
    end = ctx.clock.time() + timeout
    while True:
        raw = api_get(ctx.cluster, path, target)
        why = api_error_text(raw) if raw.status != 200 else accept(raw)
        if why is None:
            return Attempt(raw, "")
        if ctx.clock.time() + HPA_POLL_INTERVAL_S > end:
            return Attempt(None, why)
        if ctx.remaining() < HPA_POLL_INTERVAL_S:
            raise inconclusive("TIMEOUT", f"check deadline reached while retrying {path}", why)
        ctx.clock.sleep(HPA_POLL_INTERVAL_S)


def wait_for_view(
    ctx: ConformanceContext,
    api_version: str,
    plural: str,
    namespace: str | None,
    check: Callable[[dict[str, JSON]], T | None],
    describe: Callable[[dict[str, JSON]], str],
    *,
    timeout: float,
    message: str,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> T:
    """Watch until ``check(view)`` answers; AICR's bound running out fails with ``[TIMEOUT] message:
    <state>``, the check's deadline coming first is ``other``, an API error is ``other``."""
    bound = ctx.bounded(timeout)
    try:
        return observe(
            ctx.cluster,
            api_version,
            plural,
            namespace,
            check,
            timeout=bound,
            clock=ctx.clock,
            what=message,
            describe=describe,
            label_selector=label_selector,
            field_selector=field_selector,
        )
    except WaitTimeout as exc:
        view = exc.last_seen or {}
        state = describe({str(k): v for k, v in view.items() if isinstance(v, dict)})
        if bound < timeout:
            raise inconclusive("TIMEOUT", f"check deadline reached: {message}", state) from exc
        raise failure("TIMEOUT", message, f"{state} after {format_go_duration(timeout)}") from exc
    except ObjectVanished as exc:
        raise inconclusive("INTERNAL", message, exc) from exc
    except ApiError as exc:
        raise inconclusive("INTERNAL", message, exc) from exc


def wait_scaling_intent(ctx: ConformanceContext, ns: str, name: str) -> tuple[int, int]:
    """Watch HPA ``ns/name`` until it wants more replicas than it has (``desired > current``);
    AICR's 3-minute bound running out fails with :data:`MSG_HPA_NO_INTENT`."""
    key = f"{ns}/{name}"

    def check(view: dict[str, JSON]) -> tuple[int, int] | None:
        hpa = view.get(key)
        if hpa is None:
            return None
        desired, current = hpa_replicas(hpa)
        return (desired, current) if desired > current else None

    def describe(view: dict[str, JSON]) -> str:
        desired, current = hpa_replicas(view.get(key) or {})
        return f"desiredReplicas={desired} currentReplicas={current}"

    return wait_for_view(
        ctx, "autoscaling/v2", "horizontalpodautoscalers", ns, check, describe,
        timeout=HPA_SCALE_TIMEOUT_S, message=MSG_HPA_NO_INTENT, field_selector=f"metadata.name={name}",
    )  # fmt: skip
