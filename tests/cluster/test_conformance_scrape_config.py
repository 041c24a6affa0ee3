"""accelerator-metrics' second half: something must scrape the DCGM exporter (a ServiceMonitor or
PodMonitor selecting it, or a ``prometheus.io/scrape`` annotation), on both backends
(``k8s_backend``; helpers of :mod:`test_conformance_phase2`). The check never skips (only the
phase-level ``--no-cluster`` skip applies, covered with every conformance check elsewhere)."""

from __future__ import annotations

import pytest
from _facade_helpers import fake_of

from aicr_pytest.conformance import scrape_config
from tests.cluster.test_conformance_phase2 import artifacts, assert_outcome, only, run_conformance
from tests.harness.backends import K8sBackend

CHECK = "accelerator-metrics"
NOT_SCRAPED = "[NOT_FOUND] " + scrape_config.MSG_NOT_SCRAPED.format(
    ns="gpu-operator", name="nvidia-dcgm-exporter", annotation="prometheus.io/scrape"
)


def accelerator_metrics(pytester: pytest.Pytester, backend: K8sBackend) -> dict[str, object]:
    return run_conformance(pytester, backend, only(CHECK))[CHECK]


def test_the_operator_service_monitor_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    test = accelerator_metrics(pytester, k8s_backend)
    assert_outcome(test, "passed")
    assert artifacts(test)["Prometheus scrape configuration"] == (
        "ServiceMonitor gpu-operator/nvidia-dcgm-exporter selects it (endpoints: gpu-metrics)"
    )
    assert "--- Prometheus scrape configuration ---" in str(test["stdout"])


def test_no_scrape_configuration_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["dcgm-servicemonitor-missing"])
    test = accelerator_metrics(pytester, k8s_backend)
    assert_outcome(test, "failed", NOT_SCRAPED)
    assert artifacts(test)["Prometheus scrape configuration"] == "(nothing selects the DCGM exporter)"
    assert artifacts(test)["Required DCGM Metrics"].count("FOUND") == 4  # the exporter itself is fine


@pytest.mark.fake_only("edits the exporter Service and adds a PodMonitor in place")
def test_annotation_or_pod_monitor_pass(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["dcgm-servicemonitor-missing"])
    fake = fake_of(k8s_backend)
    svc = fake.get("v1", "Service", "nvidia-dcgm-exporter", "gpu-operator")
    svc["metadata"]["annotations"] = {"prometheus.io/scrape": "true"}
    fake.add(svc)
    fake.add(
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": {"name": "dcgm", "namespace": "monitoring"},
            "spec": {
                "selector": {
                    "matchExpressions": [{"key": "app", "operator": "In", "values": ["nvidia-dcgm-exporter"]}]
                },
                "namespaceSelector": {"any": True},
                "podMetricsEndpoints": [{"port": "metrics"}],
            },
        }
    )
    test = accelerator_metrics(pytester, k8s_backend)
    assert_outcome(test, "passed")
    assert artifacts(test)["Prometheus scrape configuration"] == (
        "PodMonitor monitoring/dcgm selects it (endpoints: metrics)\n"
        'Service gpu-operator/nvidia-dcgm-exporter annotation prometheus.io/scrape: "true"'
    )


@pytest.mark.fake_only("HTTP fault injection: a 500 on the ServiceMonitor list")
def test_monitor_list_error_is_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    fake_of(k8s_backend).faults.server_error(path=r"/servicemonitors", times=None)
    test = accelerator_metrics(pytester, k8s_backend)
    assert test["status"] == "other"
    assert str(test["message"]).startswith("[INTERNAL] failed to list ServiceMonitors: "), test["message"]
