"""The monitoring stack a profile installs: kube-prometheus-stack (operator CRDs, Prometheus,
exporters) and prometheus-adapter (its Service and the custom/external metrics APIServices, which
:mod:`aicr_pytest.testing.players.metrics` answers for).
"""

from __future__ import annotations

from aicr_pytest.testing.builders import (
    add_namespace,
    crd,
    crd_established,
    daemonset,
    deployment,
    running_pod,
    system_node,
)
from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster

__all__ = ["ADAPTER_IMAGE", "install_prometheus", "install_prometheus_adapter"]

ADAPTER_IMAGE = "registry.k8s.io/prometheus-adapter/prometheus-adapter:v0.12.0"


def install_prometheus(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    ns = "monitoring"
    add_namespace(fc, ns)
    group = "monitoring.coreos.com"
    for plural, kind in (
        ("prometheuses", "Prometheus"),
        ("servicemonitors", "ServiceMonitor"),
        ("podmonitors", "PodMonitor"),
        ("prometheusrules", "PrometheusRule"),
        ("alertmanagers", "Alertmanager"),
    ):
        crd_established(fc, crd(group, plural, kind, ["v1"]))
    sysnode = system_node(profile)
    nodes = [p.node_name(i) for p in profile.node_pools for i in range(p.count)]
    for name, image in (
        ("kube-prometheus-stack-operator", "quay.io/prometheus-operator/prometheus-operator:v0.83.0"),
        (
            "kube-prometheus-stack-kube-state-metrics",
            "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.16.0",
        ),
        ("kube-prometheus-stack-grafana", "docker.io/grafana/grafana:12.0.2"),
        *((("prometheus-adapter", ADAPTER_IMAGE),) if comp.options.get("adapter", True) else ()),
    ):
        deployment(
            fc, ns, name, image, sysnode, labels={"app.kubernetes.io/instance": "kube-prometheus-stack"}
        )
    daemonset(
        fc,
        ns,
        "kube-prometheus-stack-prometheus-node-exporter",
        "quay.io/prometheus/node-exporter:v1.9.1",
        nodes,
        labels={"app.kubernetes.io/instance": "kube-prometheus-stack"},
    )
    prom = fc.add(
        {
            "apiVersion": f"{group}/v1",
            "kind": "Prometheus",
            "metadata": {"name": "kube-prometheus-stack-prometheus", "namespace": ns},
            "spec": {"replicas": 1, "serviceMonitorSelector": {}},
            "status": {"availableReplicas": 1, "replicas": 1, "updatedReplicas": 1, "paused": False},
        }
    )
    sts = fc.add(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {
                "name": "prometheus-kube-prometheus-stack-prometheus",
                "namespace": ns,
                "labels": {"app.kubernetes.io/name": "prometheus"},
            },
            "spec": {
                "replicas": 1,
                "serviceName": "prometheus-operated",
                "selector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": "prometheus"}},
                    "spec": {
                        "containers": [
                            {"name": "prometheus", "image": "quay.io/prometheus/prometheus:v3.4.2"}
                        ]
                    },
                },
            },
            "status": {
                "replicas": 1,
                "readyReplicas": 1,
                "availableReplicas": 1,
                "currentReplicas": 1,
                "updatedReplicas": 1,
            },
        }
    )
    del prom
    running_pod(
        fc,
        ns,
        "prometheus-kube-prometheus-stack-prometheus-0",
        sts,
        {"app.kubernetes.io/name": "prometheus"},
        "quay.io/prometheus/prometheus:v3.4.2",
        sysnode,
        container="prometheus",
    )
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Service",
            # the chart's labels: AICR finds it by ``self-monitor=true`` (no app.kubernetes.io/name)
            "metadata": {
                "name": "kube-prometheus-stack-prometheus",
                "namespace": ns,
                "labels": {"app": "kube-prometheus-stack-prometheus", "self-monitor": "true"},
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": "172.20.10.10",
                "ports": [{"name": "http-web", "port": 9090, "targetPort": 9090, "protocol": "TCP"}],
                "selector": {"app.kubernetes.io/name": "prometheus"},
            },
        }
    )
    if comp.options.get("adapter", True):
        install_prometheus_adapter(fc, ns)


def install_prometheus_adapter(fc: SimulatedCluster, ns: str) -> None:
    """prometheus-adapter's Service and the two APIServices it serves (``v1beta1.custom.metrics.k8s.io``,
    ``v1beta1.external.metrics.k8s.io``, Available); the metrics player answers for them."""
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "prometheus-adapter",
                "namespace": ns,
                "labels": {"app": "prometheus-adapter"},
            },
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": "prometheus-adapter"},
                "ports": [{"name": "https", "port": 443, "targetPort": 6443, "protocol": "TCP"}],
            },
        }
    )
    for group in ("custom.metrics.k8s.io", "external.metrics.k8s.io"):
        fc.add(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"v1beta1.{group}", "labels": {"app": "prometheus-adapter"}},
                "spec": {
                    "group": group,
                    "version": "v1beta1",
                    "service": {"namespace": ns, "name": "prometheus-adapter", "port": 443},
                    "insecureSkipTLSVerify": True,
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                },
                "status": {
                    "conditions": [
                        {
                            "type": "Available",
                            "status": "True",
                            "reason": "Passed",
                            "message": "all checks passed",
                            "lastTransitionTime": fc.clock.timestamp(),
                        }
                    ]
                },
            }
        )
