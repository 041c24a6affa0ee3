"""``pod-autoscaling`` (CNCF ``pod_autoscaling``): GPU metrics flow DCGM →
Prometheus → adapter → HPA, proven by an HPA that scales a Deployment up and back down on the
cluster-wide external GPU metric.

1. Skip unless a pod labelled ``app=nvidia-dcgm-exporter`` exists somewhere (AICR also skips when
   the pod list fails; here that is ``other``: an unanswered question is not an absent exporter).
2. Custom metrics API discovery, warm-up retried every 10 s for 60 s.
3. Pod-scoped GPU custom metrics, best effort (6 attempts): absent on DRA clusters, never a failure.
4. External metric ``dcgm_gpu_power_usage`` in ``default``, warm-up retried every 10 s for 60 s
   until it has items.
5. The behavioural test in a run-scoped namespace ``hpa-test-<run>``: a 1-replica busybox
   Deployment, an HPA (min 1, max 3, target AverageValue 10, scale-down window 0), then watch the
   HPA until it wants more replicas than it has (3 min), the Deployment until it has more than one
   (2 min), raise the target to 999999 and watch the Deployment come back to one (2 min).

Everything created belongs to the run scope (deleted on pass, fail, timeout and Ctrl-C); the
namespace is also deleted when the check ends, without waiting, as AICR does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aicr_pytest.conformance.ai_service_metrics import custom_metrics_report, parse_api_resource_list
from aicr_pytest.conformance.autoscaling import (
    CUSTOM_METRICS_PATH,
    DEPLOYMENT_SCALE_TIMEOUT_S,
    EXTERNAL_METRIC,
    HPA_POLL_INTERVAL_S,
    external_metric_path,
    external_metric_target,
    hpa_manifest,
    metric_items,
    retry_metrics_api,
    wait_for_view,
    wait_scaling_intent,
)
from aicr_pytest.conformance.common import failure, inconclusive, list_objects
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.endpoints import api_get
from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.rawhttp import RawResponse
from aicr_pytest.kube.transport import Target

__all__ = [
    "DCGM_SELECTOR",
    "POD_METRICS",
    "POD_METRIC_ATTEMPTS",
    "POD_METRIC_NAMESPACES",
    "SCALE_DOWN_TARGET",
    "SKIP_NO_DCGM",
    "TEST_IMAGE",
    "deployment_manifest",
    "deployment_replicas",
    "run_pod_autoscaling",
]

DCGM_SELECTOR = "app=nvidia-dcgm-exporter"
SKIP_NO_DCGM = "DCGM exporter not found — GPU metrics not available for HPA"
POD_METRICS: tuple[str, ...] = ("gpu_utilization", "gpu_memory_used", "gpu_power_usage")
POD_METRIC_NAMESPACES: tuple[str, ...] = ("gpu-operator", "dynamo-system")
POD_METRIC_ATTEMPTS = 6
SCALE_DOWN_TARGET = "999999"
TEST_IMAGE = "busybox:1.37"
NAME_BASE = "hpa-test"

JSON = dict[str, Any]


def deployment_manifest(name: str, namespace: str) -> JSON:
    """The scale target: one busybox ``sleep 3600``, tiny requests, no GPU, no tolerations."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "containers": [
                        {
                            "name": "sleep",
                            "image": TEST_IMAGE,
                            "command": ["sleep", "3600"],
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ]
                },
            },
        },
    }


def deployment_replicas(dep: Mapping[str, Any] | None) -> int:
    return int(((dep or {}).get("status") or {}).get("replicas") or 0)


def _custom_metrics_discovery(ctx: ConformanceContext) -> None:
    attempt = retry_metrics_api(
        ctx, CUSTOM_METRICS_PATH, Target("get", "", CUSTOM_METRICS_PATH), lambda raw: None
    )
    if attempt.raw is None:
        raise failure(
            "NOT_FOUND", "custom metrics API not available (prometheus-adapter not ready)", attempt.error
        )
    summary = parse_api_resource_list(attempt.raw.body)
    ctx.record("Custom Metrics API", custom_metrics_report(attempt.raw.status, summary))


def _pod_metric_sample(ctx: ConformanceContext) -> None:
    """Best effort: the first pod-scoped GPU metric with items, else a WARN artifact."""
    for attempt in range(1, POD_METRIC_ATTEMPTS + 1):
        for metric in POD_METRICS:
            for ns in POD_METRIC_NAMESPACES:
                path = f"{CUSTOM_METRICS_PATH}/namespaces/{ns}/pods/*/{metric}"
                target = Target("get", "custom.metrics.k8s.io", f"pods/{metric}", ns, "*")
                raw: RawResponse = api_get(ctx.cluster, path, target)
                items = metric_items(raw) if raw.status == 200 else []
                if items:
                    ctx.record("Custom metric sample", f"Path: {path}\nItems: {len(items)}")
                    return
        if attempt == POD_METRIC_ATTEMPTS:
            break
        if ctx.remaining() < HPA_POLL_INTERVAL_S:
            raise inconclusive(
                "TIMEOUT", "timed out waiting for GPU custom metrics", "context deadline exceeded"
            )
        ctx.clock.sleep(HPA_POLL_INTERVAL_S)
    ctx.emit("WARN: no pod-scoped GPU custom metrics (expected on DRA clusters)")
    ctx.record(
        "Custom metric sample",
        "Pod-scoped GPU custom metrics not available (no exported_pod attribution; typical for "
        "DRA-allocated GPUs). Autoscaling capability is proven with the external metric "
        f"{EXTERNAL_METRIC} below.",
    )


def _external_metric(ctx: ConformanceContext) -> None:
    def accept(raw: RawResponse) -> str | None:
        return None if metric_items(raw) else f"[NOT_FOUND] external metric {EXTERNAL_METRIC} has no data"

    path = external_metric_path("default")
    attempt = retry_metrics_api(ctx, path, external_metric_target("default"), accept)
    if attempt.raw is None:
        raise failure("NOT_FOUND", f"external metric {EXTERNAL_METRIC} not available", attempt.error)
    items = metric_items(attempt.raw)
    values = ", ".join(str((i or {}).get("value")) for i in items[:5] if isinstance(i, Mapping))
    ctx.record("External Metrics API", f"Path: {path}\nItems: {len(items)}\nValues: {values}")


def _behavioural_test(ctx: ConformanceContext) -> None:
    run = ctx.run
    try:
        ns = run.create_namespace_for_run(NAME_BASE)
    except ApiError as exc:
        raise inconclusive("INTERNAL", "failed to create HPA test namespace", exc) from exc
    try:
        name = ns  # namespace, Deployment and HPA share the run-scoped name
        dep = deployment_manifest(name, ns)
        hpa = hpa_manifest(name, ns, max_replicas=3, scale_down_window=0)
        ctx.record(
            "Apply test manifest",
            f"namespace/{ns} created\ndeployment.apps/{name} created (replicas=1, image={TEST_IMAGE})\n"
            f"horizontalpodautoscaler.autoscaling/{name} created (external metric {EXTERNAL_METRIC}, "
            "AverageValue 10, min 1, max 3)",
        )
        try:
            run.create(dep)
            run.create(hpa)
        except ApiError as exc:
            raise inconclusive("INTERNAL", "failed to create HPA test workload", exc) from exc
        desired, current = wait_scaling_intent(ctx, ns, name)
        up = _wait_replicas(
            ctx, ns, name, lambda n: n > 1,
            "deployment did not scale up within timeout — HPA may not be effective",
        )  # fmt: skip
        _raise_target(ctx, ns, name)
        down = _wait_replicas(
            ctx, ns, name, lambda n: n <= 1,
            "deployment did not scale down within timeout — HPA scale-down may not be effective",
        )  # fmt: skip
        ctx.record(
            "HPA Behavioral Test",
            f"HPA desired replicas: {desired}\nHPA current replicas: {current}\n"
            f"Deployment scaled up to: {up}\nDeployment scaled down to: {down}\nResult: PASS",
        )
    finally:
        _delete_namespace(ctx, ns)


def _wait_replicas(ctx: ConformanceContext, ns: str, name: str, done: Any, message: str) -> int:
    key = f"{ns}/{name}"

    def check(view: dict[str, JSON]) -> int | None:
        dep = view.get(key)
        replicas = deployment_replicas(dep)
        return replicas if dep is not None and done(replicas) else None

    def describe(view: dict[str, JSON]) -> str:
        return f"deployment status.replicas={deployment_replicas(view.get(key))}"

    return wait_for_view(
        ctx, "apps/v1", "deployments", ns, check, describe,
        timeout=DEPLOYMENT_SCALE_TIMEOUT_S, message=message, field_selector=f"metadata.name={name}",
    )  # fmt: skip


def _raise_target(ctx: ConformanceContext, ns: str, name: str) -> None:
    try:
        hpa = ctx.cluster.get("autoscaling/v2", "horizontalpodautoscalers", name, ns)
    except ApiError as exc:
        raise inconclusive("INTERNAL", "failed to get HPA for scale-down test", exc) from exc
    metrics = list((hpa.get("spec") or {}).get("metrics") or [])
    if not metrics or not isinstance(metrics[0], dict) or "external" not in metrics[0]:
        raise inconclusive(
            "INTERNAL", "failed to update HPA target for scale-down", "HPA has no external metric"
        )
    metrics[0]["external"].setdefault("target", {})["averageValue"] = SCALE_DOWN_TARGET
    try:
        ctx.cluster.patch(
            "autoscaling/v2", "horizontalpodautoscalers", name, {"spec": {"metrics": metrics}}, ns
        )
    except ApiError as exc:
        raise inconclusive("INTERNAL", "failed to update HPA target for scale-down", exc) from exc


def _delete_namespace(ctx: ConformanceContext, ns: str) -> None:
    try:
        ctx.cluster.delete("v1", "Namespace", ns, propagation="Background", missing_ok=True)
        ctx.record("Delete test namespace", f"namespace/{ns} deleted")
    except ApiError as exc:  # the run scope's cleanup tries again and reports it
        ctx.record("Delete test namespace", f"namespace/{ns}: delete failed: {exc}")


def run_pod_autoscaling(ctx: ConformanceContext) -> None:
    """The check (module docstring)."""
    pods = list_objects(
        ctx.cluster, "v1", "pods", None, "failed to list DCGM exporter pods", label_selector=DCGM_SELECTOR
    )
    if not pods:
        raise CheckSkip(SKIP_NO_DCGM)
    _custom_metrics_discovery(ctx)
    _pod_metric_sample(ctx)
    _external_metric(ctx)
    _behavioural_test(ctx)
