"""Player for the GPU metrics pipeline: the DCGM exporter, Prometheus and prometheus-adapter.

What the conformance checks ``accelerator-metrics``, ``ai-service-metrics`` and ``pod-autoscaling``
read, behind the API server:

* **DCGM exporter** -- the service proxy of ``gpu-operator/nvidia-dcgm-exporter`` (port 9400)
  answers ``GET /metrics`` with the Prometheus text format of the GPUs on one GPU node:
  ``DCGM_FI_DEV_GPU_UTIL``, ``DCGM_FI_DEV_FB_USED``, ``DCGM_FI_DEV_FB_FREE``,
  ``DCGM_FI_DEV_GPU_TEMP``, ``DCGM_FI_DEV_POWER_USAGE``, one sample per GPU (model, UUID, PCI bus
  id, hostname labels, as dcgm-exporter writes them).
* **Prometheus** -- the service proxy of ``monitoring/kube-prometheus-stack-prometheus`` (port 9090)
  answers ``GET /api/v1/query?query=<metric>`` with an instant vector of the scraped DCGM series
  (every GPU of every GPU node), ``{"status": "success", "data": {"resultType": "vector", ...}}``.
  A query for the Dynamo jobs' series (``__name__=~"dynamo_.*"``) answers one series per metric
  of :data:`DYNAMO_METRICS` for each Running Dynamo frontend/worker pod in ``dynamo-workload``
  (jobs ``dynamo-system/dynamo-frontend`` / ``dynamo-system/dynamo-worker``).
* **prometheus-adapter** -- the aggregated APIs ``custom.metrics.k8s.io/v1beta1`` (discovery, and
  pod metrics ``gpu_utilization``/``gpu_memory_used``/``gpu_power_usage`` per namespace, attributed
  to the DCGM exporter pods) and ``external.metrics.k8s.io/v1beta1`` (``dcgm_gpu_power_usage`` in
  every namespace: the cluster-wide average power draw, :data:`POWER_WATTS` W).

Faults: ``prometheus-down`` (the Prometheus Service has no ready endpoints: the service proxy
answers 503 ``no endpoints available``), ``dcgm-exporter-no-gpu-series`` (the exporter sees no GPU:
only ``# HELP``/``# TYPE`` lines, so Prometheus has no DCGM series and the adapter no data),
``prometheus-adapter-missing`` (no adapter: neither metrics API is served),
``dynamo-metrics-missing`` (Dynamo serves but nothing scrapes it: no ``dynamo_*`` series).

``fc.state["metrics"]`` tunes a scenario (read on every request): ``power_watts`` (the external
metric's value), ``prometheus_empty_queries`` (that many empty results before the series appear),
``dcgm_status`` / ``prometheus_status`` (every proxied request gets that HTTP status),
``dcgm_extra_bytes`` (that many bytes of comment lines appended to ``/metrics``),
``prometheus_body`` (the query answer's body, as is), ``unreachable`` (a collection of ``dcgm`` /
``prometheus``: the API server finds no ready endpoint for that Service and answers 503).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlsplit

from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, SimulatedCluster

__all__ = [
    "DCGM_METRICS",
    "DYNAMO_METRICS",
    "FAULT_ADAPTER_MISSING",
    "FAULT_DYNAMO_METRICS_MISSING",
    "FAULT_NO_GPU_SERIES",
    "FAULT_PROMETHEUS_DOWN",
    "POWER_WATTS",
    "STATE_KEY",
    "MetricsBackend",
    "dcgm_body",
    "install",
]

STATE_KEY: Final = "metrics"
FAULT_PROMETHEUS_DOWN: Final = "prometheus-down"
FAULT_NO_GPU_SERIES: Final = "dcgm-exporter-no-gpu-series"
FAULT_ADAPTER_MISSING: Final = "prometheus-adapter-missing"
FAULT_DYNAMO_METRICS_MISSING: Final = "dynamo-metrics-missing"
DYNAMO_WORKLOAD_NAMESPACE: Final = "dynamo-workload"
DYNAMO_COMPONENT_LABEL: Final = "nvidia.com/dynamo-component-type"
DYNAMO_QUERY_MARK: Final = '__name__=~"dynamo_.*"'
#: component type -> the series names its pods export
DYNAMO_METRICS: Final[dict[str, tuple[str, ...]]] = {
    "frontend": (
        "dynamo_frontend_inflight_requests",
        "dynamo_frontend_requests_total",
        "dynamo_frontend_time_to_first_token_seconds_count",
    ),
    "worker": (
        "dynamo_component_inflight_requests",
        "dynamo_component_request_duration_seconds_count",
        "dynamo_component_requests_total",
    ),
}
DCGM_NAMESPACE: Final = "gpu-operator"
DCGM_SERVICE: Final = "nvidia-dcgm-exporter"
PROMETHEUS_NAMESPACE: Final = "monitoring"
PROMETHEUS_SERVICE: Final = "kube-prometheus-stack-prometheus"
POWER_WATTS: Final = 46.0
EXTERNAL_METRICS: Final = ("dcgm_gpu_power_usage", "dcgm_gpu_utilization")
POD_METRICS: Final = ("gpu_utilization", "gpu_memory_used", "gpu_power_usage")

#: (name, help, type, value for GPU ``i``)
DCGM_METRICS: Final[tuple[tuple[str, str, str], ...]] = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge"),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge"),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge"),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge"),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge"),
)


def _gpus(node: Obj) -> int:
    try:
        return int(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", "0"))
    except ValueError:
        return 0


def gpu_count(node: Obj) -> int:
    """The GPUs the exporter on ``node`` reports (its allocatable ``nvidia.com/gpu``)."""
    return _gpus(node)


def gpu_labels(node: Obj, gpu: int) -> dict[str, str]:
    """The labels of GPU ``gpu``'s series on ``node`` (``gpu``, ``UUID``, ``Hostname``, ...)."""
    return _labels(node, gpu)


def _value(metric: str, gpu: int) -> float:
    return {
        "DCGM_FI_DEV_GPU_UTIL": 0.0,
        "DCGM_FI_DEV_FB_USED": 0.0,
        "DCGM_FI_DEV_FB_FREE": 81079.0,
        "DCGM_FI_DEV_GPU_TEMP": 31.0 + gpu % 4,
        "DCGM_FI_DEV_POWER_USAGE": POWER_WATTS + gpu * 0.25,
    }.get(metric, 0.0)


def _labels(node: Obj, gpu: int) -> dict[str, str]:
    labels = node["metadata"].get("labels") or {}
    name = str(node["metadata"]["name"])
    return {
        "gpu": str(gpu),
        "UUID": f"GPU-{hashlib.sha1(name.encode()).hexdigest()[:8]}-0000-4000-8000-{gpu:012x}",
        "pci_bus_id": f"00000000:{0x18 + gpu * 0x10:02X}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": str(labels.get("nvidia.com/gpu.product", "NVIDIA GPU")).replace("-", " "),
        "Hostname": name,
        "DCGM_FI_DRIVER_VERSION": str(labels.get("nvidia.com/cuda.driver-version.full", "580.95.05")),
    }


def dcgm_body(node: Obj | None, *, no_gpus: bool = False, gpus: int | None = None) -> str:
    """The exporter's ``/metrics`` text for ``node``'s GPUs (only HELP/TYPE lines when ``no_gpus``;
    ``gpus``: that many GPUs instead of the node's allocatable ones)."""
    lines: list[str] = []
    count = 0 if no_gpus or node is None else (_gpus(node) if gpus is None else gpus)
    for name, text, kind in DCGM_METRICS:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for gpu in range(count):
            assert node is not None
            labels = ",".join(f'{k}="{v}"' for k, v in _labels(node, gpu).items())
            lines.append(f"{name}{{{labels}}} {_value(name, gpu):g}")
    return "\n".join(lines) + "\n"


class MetricsBackend:
    """What the DCGM exporter, Prometheus and prometheus-adapter answer, over any cluster view:
    ``gpu_nodes()`` (Node objects), ``exporter_pods(namespace)`` (DCGM exporter pod names there),
    ``now()`` (epoch seconds), ``state`` (the scenario knobs of the module docstring), ``faults``
    and ``dynamo_pods()`` (the pods in ``dynamo-workload``). The fake's player builds one over the
    FakeCluster; the control-plane harness builds one over the real apiserver and serves it over real HTTP."""

    def __init__(
        self,
        gpu_nodes: Callable[[], list[Obj]],
        exporter_pods: Callable[[str], list[str]],
        now: Callable[[], float],
        state: dict[str, Any],
        faults: Sequence[str],
        dynamo_pods: Callable[[], list[Obj]] = list,
    ) -> None:
        self.gpu_nodes = gpu_nodes
        self.dynamo_pods = dynamo_pods
        self.exporter_pods = exporter_pods
        self.now = now
        self._state = state
        self.faults = list(faults)
        self.prometheus_queries = 0

    @property
    def state(self) -> dict[str, Any]:
        return self._state

    def timestamp(self) -> str:
        return datetime.fromtimestamp(self.now(), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def no_series(self) -> bool:
        return FAULT_NO_GPU_SERIES in self.faults

    def power(self) -> float:
        return float(self.state.get("power_watts", POWER_WATTS))

    # -- DCGM exporter ----------------------------------------------------------------------------
    def unreachable(self, what: str, service: str) -> tuple[int, str] | None:
        """The API server's own 503 when ``what`` is scripted unreachable (no ready endpoint)."""
        if what not in (self.state.get("unreachable") or ()):
            return None
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'no endpoints available for service "{service}"',
            "reason": "ServiceUnavailable",
            "code": 503,
        }
        return 503, json.dumps(status)

    def dcgm(self, method: str, path: str, body: bytes) -> tuple[int, str]:
        refused = self.unreachable("dcgm", DCGM_SERVICE)
        if refused is not None:
            return refused
        if "dcgm_status" in self.state:
            return int(self.state["dcgm_status"]), "injected failure\n"
        if method != "GET" or urlsplit(path).path != "/metrics":
            return 404, "404 page not found\n"
        nodes = self.gpu_nodes()
        text = dcgm_body(nodes[0] if nodes else None, no_gpus=self.no_series)
        extra = int(self.state.get("dcgm_extra_bytes", 0))
        if extra > 0:
            text += ("# padding " + "x" * 1013 + "\n") * (extra // 1024 + 1)
        return 200, text

    # -- Prometheus -------------------------------------------------------------------------------
    def prometheus(self, method: str, path: str, body: bytes) -> tuple[int, str]:
        refused = self.unreachable("prometheus", PROMETHEUS_SERVICE)
        if refused is not None:
            return refused
        if "prometheus_body" in self.state:
            return 200, str(self.state["prometheus_body"])
        if "prometheus_status" in self.state:
            return int(self.state["prometheus_status"]), json.dumps({"status": "error", "error": "injected"})
        parts = urlsplit(path)
        if parts.path != "/api/v1/query":
            return 404, "404 page not found\n"
        query = (parse_qs(parts.query).get("query") or [""])[-1]
        self.prometheus_queries += 1
        self.state["prometheus_queries"] = self.prometheus_queries
        empty_first = int(self.state.get("prometheus_empty_queries", 0))
        result: list[Obj] = []
        if DYNAMO_QUERY_MARK in query:
            result = self.dynamo_series()
        elif not self.no_series and self.prometheus_queries > empty_first:
            names = {m[0] for m in DCGM_METRICS}
            if query in names:
                now = self.now()
                for node in self.gpu_nodes():
                    for gpu in range(_gpus(node)):
                        metric = {"__name__": query, **_labels(node, gpu), "job": "nvidia-dcgm-exporter"}
                        result.append({"metric": metric, "value": [now, f"{_value(query, gpu):g}"]})
        doc = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return 200, json.dumps(doc)

    def dynamo_series(self) -> list[Obj]:
        """The scraped ``dynamo_*`` series of the Running Dynamo pods (none under the fault)."""
        if FAULT_DYNAMO_METRICS_MISSING in self.faults:
            return []
        out: list[Obj] = []
        for pod in sorted(self.dynamo_pods(), key=lambda p: str(p["metadata"]["name"])):
            kind = str((pod["metadata"].get("labels") or {}).get(DYNAMO_COMPONENT_LABEL) or "")
            if kind not in DYNAMO_METRICS or (pod.get("status") or {}).get("phase") != "Running":
                continue
            for name in DYNAMO_METRICS[kind]:
                metric = {
                    "__name__": name,
                    "job": f"dynamo-system/dynamo-{kind}",
                    "namespace": DYNAMO_WORKLOAD_NAMESPACE,
                    "pod": str(pod["metadata"]["name"]),
                }
                out.append({"metric": metric, "value": [self.now(), "0"]})
        return out

    # -- prometheus-adapter -----------------------------------------------------------------------
    def custom_metrics(self, method: str, path: str, query: dict[str, str]) -> tuple[int, Obj | str]:
        gv = "custom.metrics.k8s.io/v1beta1"
        if path == "":
            resources = [
                {"name": f"{kind}/{m}", "singularName": "", "namespaced": True, "kind": "MetricValueList",
                 "verbs": ["get"]}
                for m in POD_METRICS
                for kind in ("pods", "namespaces")
            ]  # fmt: skip
            return 200, {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": gv,
                "resources": resources,
            }
        parts = [p for p in path.split("/") if p]
        if len(parts) == 5 and parts[0] == "namespaces" and parts[2] == "pods" and parts[4] in POD_METRICS:
            ns, metric = parts[1], parts[4]
            items: list[Obj] = []
            if not self.no_series:
                for pod in self.exporter_pods(ns):
                    items.append(
                        {
                            "describedObject": {
                                "kind": "Pod",
                                "namespace": ns,
                                "name": pod,
                                "apiVersion": "/v1",
                            },
                            "metricName": metric,
                            "timestamp": self.timestamp(),
                            "value": "0" if metric != "gpu_power_usage" else f"{int(self.power())}",
                        }
                    )
            return 200, {"kind": "MetricValueList", "apiVersion": gv, "metadata": {}, "items": items}
        return 404, _not_found(f"the server could not find the metric {parts[-1] if parts else ''}")

    def external_metrics(self, method: str, path: str, query: dict[str, str]) -> tuple[int, Obj | str]:
        gv = "external.metrics.k8s.io/v1beta1"
        if path == "":
            resources = [
                {"name": m, "singularName": "", "namespaced": True, "kind": "ExternalMetricValueList",
                 "verbs": ["get"]}
                for m in EXTERNAL_METRICS
            ]  # fmt: skip
            return 200, {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": gv,
                "resources": resources,
            }
        parts = [p for p in path.split("/") if p]
        if len(parts) == 3 and parts[0] == "namespaces" and parts[2] in EXTERNAL_METRICS:
            items: list[Obj] = []
            if not self.no_series:
                value = self.power() if parts[2] == "dcgm_gpu_power_usage" else 0.0
                items.append(
                    {
                        "metricName": parts[2],
                        "metricLabels": {},
                        "timestamp": self.timestamp(),
                        "value": f"{value:g}",
                    }
                )
            return 200, {"kind": "ExternalMetricValueList", "apiVersion": gv, "metadata": {}, "items": items}
        return 404, _not_found(f"the server could not find the requested resource ({path})")

    def external_value(self, metric: str) -> float | None:
        """What the adapter serves for ``metric`` now (``None``: no data) -- the HPA controller reads it."""
        if self.no_series or FAULT_ADAPTER_MISSING in self.faults or metric not in EXTERNAL_METRICS:
            return None
        return self.power() if metric == "dcgm_gpu_power_usage" else 0.0


def _not_found(message: str) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "NotFound", "code": 404}  # fmt: skip


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Serve what the profile's components run (harmless on a profile without them)."""

    def gpu_nodes() -> list[Obj]:
        nodes = fc.list("v1", "Node", label_selector="nvidia.com/gpu.present=true")
        return sorted(nodes, key=lambda n: str(n["metadata"]["name"]))

    def exporter_pods(namespace: str) -> list[str]:
        pods = fc.list("v1", "Pod", namespace, label_selector="app=nvidia-dcgm-exporter")
        return [str(p["metadata"]["name"]) for p in pods]

    def dynamo_pods() -> list[Obj]:
        return fc.list("v1", "Pod", DYNAMO_WORKLOAD_NAMESPACE)

    player = MetricsBackend(
        gpu_nodes,
        exporter_pods,
        fc.clock.time,
        fc.state.setdefault(STATE_KEY, {}),
        profile.faults,
        dynamo_pods,
    )
    fc.state["metrics_player"] = player
    if profile.component("gpu-operator") is not None:
        fc.server.proxy_handlers[(DCGM_NAMESPACE, DCGM_SERVICE)] = player.dcgm
    if profile.component("kube-prometheus-stack") is None:
        return
    if FAULT_PROMETHEUS_DOWN not in profile.faults:
        fc.server.proxy_handlers[(PROMETHEUS_NAMESPACE, PROMETHEUS_SERVICE)] = player.prometheus
    if FAULT_ADAPTER_MISSING not in profile.faults:
        fc.server.aggregated[("custom.metrics.k8s.io", "v1beta1")] = player.custom_metrics
        fc.server.aggregated[("external.metrics.k8s.io", "v1beta1")] = player.external_metrics
