"""Is the DCGM exporter scraped? The Prometheus scrape configuration that selects it
(``accelerator-metrics``, after the exporter's own metrics).

Any one of these counts:

* a Prometheus-operator ``ServiceMonitor`` whose ``selector`` matches the exporter Service's labels
  and whose ``namespaceSelector`` covers its namespace (``any: true``, ``matchNames``, or -- with no
  namespace selector -- the ServiceMonitor's own namespace);
* a ``PodMonitor`` that selects the exporter's pods the same way;
* the exporter Service annotated ``prometheus.io/scrape: "true"`` (annotation-based scraping).

The monitor kinds not being served reads as "no monitors" (the annotation may still hold); any
other read error is ``other``. Nothing selecting the exporter fails: its metrics never reach
Prometheus, whatever the exporter serves. Pure matching first, then the one orchestrating function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from aicr_pytest.conformance.common import failure, list_objects, meta, read_object, spec
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.endpoints import ServiceEndpoint

__all__ = [
    "MONITORING_API",
    "MSG_NOT_SCRAPED",
    "SCRAPE_ANNOTATION",
    "monitor_selects",
    "selector_matches",
    "verify_scrape_config",
]

MONITORING_API: Final = "monitoring.coreos.com/v1"
SCRAPE_ANNOTATION: Final = "prometheus.io/scrape"
MSG_NOT_SCRAPED: Final = (
    "no Prometheus scrape configuration selects the DCGM exporter: no ServiceMonitor or PodMonitor "
    'matches Service {ns}/{name} or its pods, and the Service has no {annotation}: "true" annotation'
)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A ``metav1.LabelSelector`` (``matchLabels`` and ``matchExpressions``) against ``labels``.

    An absent or empty selector matches nothing here (a monitor must name what it scrapes); an
    unknown operator matches nothing (fail closed).
    """
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return False
    if any(labels.get(str(k)) != str(v) for k, v in match_labels.items()):
        return False
    for expr in expressions:
        if not isinstance(expr, Mapping):
            return False
        key, op = str(expr.get("key") or ""), str(expr.get("operator") or "")
        values = [str(v) for v in expr.get("values") or []]
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _covers_namespace(monitor: Mapping[str, Any], namespace: str) -> bool:
    ns_selector = spec(monitor).get("namespaceSelector")
    if not isinstance(ns_selector, Mapping) or not ns_selector:
        return str(meta(monitor).get("namespace") or "") == namespace
    if ns_selector.get("any") is True:
        return True
    return namespace in [str(n) for n in ns_selector.get("matchNames") or []]


def monitor_selects(monitor: Mapping[str, Any], namespace: str, labels: Mapping[str, str]) -> bool:
    """Whether a ServiceMonitor/PodMonitor selects an object with ``labels`` in ``namespace``."""
    return _covers_namespace(monitor, namespace) and selector_matches(spec(monitor).get("selector"), labels)


def _monitors(ctx: ConformanceContext, kind: str) -> list[dict[str, Any]]:
    return list_objects(
        ctx.cluster, MONITORING_API, kind, None, f"failed to list {kind}s", not_found_empty=True
    )


def _describe(monitor: Mapping[str, Any], kind: str) -> str:
    ports = [
        str(e.get("port") or e.get("targetPort") or "?")
        for e in spec(monitor).get("endpoints" if kind == "ServiceMonitor" else "podMetricsEndpoints") or []
        if isinstance(e, Mapping)
    ]
    where = f"{meta(monitor).get('namespace')}/{meta(monitor).get('name')}"
    return f"{kind} {where} selects it (endpoints: {', '.join(ports) or 'none'})"


def verify_scrape_config(ctx: ConformanceContext, exporter: ServiceEndpoint) -> None:
    """Record what selects the exporter for scraping; fail when nothing does (module docstring)."""
    service = read_object(
        ctx.cluster,
        "v1",
        "Service",
        exporter.service,
        exporter.namespace,
        f"service {exporter.namespace}/{exporter.service}",
    )
    svc_labels = {str(k): str(v) for k, v in (meta(service).get("labels") or {}).items()}
    found: list[str] = []
    for monitor in _monitors(ctx, "ServiceMonitor"):
        if monitor_selects(monitor, exporter.namespace, svc_labels):
            found.append(_describe(monitor, "ServiceMonitor"))
    pod_selector = spec(service).get("selector") or {}
    pod_labels: Sequence[Mapping[str, str]] = []
    if pod_selector:
        selector = ",".join(f"{k}={v}" for k, v in sorted(pod_selector.items()))
        pods = list_objects(
            ctx.cluster,
            "v1",
            "Pod",
            exporter.namespace,
            f"failed to list pods in namespace {exporter.namespace}",
            label_selector=selector,
        )
        pod_labels = [{str(k): str(v) for k, v in (meta(p).get("labels") or {}).items()} for p in pods]
    for monitor in _monitors(ctx, "PodMonitor"):
        if any(monitor_selects(monitor, exporter.namespace, labels) for labels in pod_labels):
            found.append(_describe(monitor, "PodMonitor"))
    annotation = str((meta(service).get("annotations") or {}).get(SCRAPE_ANNOTATION) or "")
    if annotation == "true":
        found.append(
            f'Service {exporter.namespace}/{exporter.service} annotation {SCRAPE_ANNOTATION}: "true"'
        )
    ctx.record(
        "Prometheus scrape configuration",
        found or ["(nothing selects the DCGM exporter)"],
        "kubectl get servicemonitors,podmonitors -A",
    )
    if not found:
        raise failure(
            "NOT_FOUND",
            MSG_NOT_SCRAPED.format(
                ns=exporter.namespace, name=exporter.service, annotation=SCRAPE_ANNOTATION
            ),
        )
