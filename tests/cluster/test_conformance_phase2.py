"""Conformance phase II end to end: the bundled checks through the plugin, on both backends.

accelerator-metrics, ai-service-metrics, inference-gateway, pod-autoscaling, cluster-autoscaling,
slinky-slurm-health and slinky-slurm-imex-channel run through pytester as the least-privilege
user (on the control plane: bound to ``deploy/rbac.yaml`` only). On the fake, the endpoints behind
the API server are players (:mod:`aicr_pytest.testing.players.metrics`, ``.autoscaling``,
``.slinky``); on the control plane they are real HTTP servers behind the real apiserver's service
proxy and aggregation layer (reached through the harness's egress proxy), the real HPA controller
scales the real Deployment controller's Deployments, and kwok runs the Slurm commands.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.constraints
import aicr_pytest.core.inputs
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.conformance import inference_gateway as gw
from aicr_pytest.core import yamlio
from aicr_pytest.core.artifacts import EXTRA_KEY
from tests.cluster.check_runner import PhaseRun, run_on_backend
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PHASE2 = (
    "accelerator-metrics",
    "ai-service-metrics",
    "inference-gateway",
    "pod-autoscaling",
    "cluster-autoscaling",
    "slinky-slurm-health",
    "slinky-slurm-imex-channel",
)
PROM_URL = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
DCGM_URL = "http://nvidia-dcgm-exporter.gpu-operator.svc:9400"


def recipe(
    checks: tuple[str, ...] = PHASE2, *, extra_refs: tuple[dict[str, Any], ...] = ()
) -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"]["conformance"] = {"checks": list(checks)}
    doc["componentRefs"] = [*doc["componentRefs"], *copy.deepcopy(list(extra_refs))]
    return doc


AGENTGATEWAY = {"name": "agentgateway", "namespace": "agentgateway-system", "type": "Helm"}
SLINKY = {"name": "slinky-slurm", "namespace": "slurm", "type": "Helm"}


def run_conformance(
    pytester: pytest.Pytester, backend: K8sBackend, doc: dict[str, Any], *extra: str
) -> dict[str, dict[str, Any]]:
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    run: PhaseRun = run_on_backend(
        pytester, backend, phase="conformance", recipe=doc, snapshot=SNAPSHOT, extra=extra, drive=drive
    )
    assert backend.controller_errors() == []
    return run.tests


def artifacts(test: dict[str, Any]) -> dict[str, str]:
    """label -> data of a test's structured evidence artifacts."""
    return {a["label"]: a["data"] for a in (test.get("extra") or {}).get(EXTRA_KEY) or []}


def assert_outcome(test: dict[str, Any], status: str, message: str | None = None) -> None:
    assert test["status"] == status, json.dumps({k: test.get(k) for k in ("status", "message")})
    if message is not None:
        assert test.get("message") == message


# -- the healthy training profile -------------------------------------------------------------------


def test_training_profile_passes_what_a_training_cluster_has(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    tests = run_conformance(pytester, k8s_backend, recipe())
    for name in ("accelerator-metrics", "ai-service-metrics", "pod-autoscaling", "cluster-autoscaling"):
        assert_outcome(tests[name], "passed")
    assert_outcome(tests["inference-gateway"], "skipped", gw.SKIP_NO_AGENTGATEWAY)
    for name in ("slinky-slurm-health", "slinky-slurm-imex-channel"):
        assert_outcome(tests[name], "skipped", "slinky-slurm component not present in recipe")
    dcgm = artifacts(tests["accelerator-metrics"])
    assert dcgm["Required DCGM Metrics"].splitlines() == [
        f"  {m:<30} FOUND"
        for m in (
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_GPU_TEMP",
            "DCGM_FI_DEV_POWER_USAGE",
        )
    ]
    assert "--- Required DCGM Metrics ---" in tests["accelerator-metrics"]["stdout"]
    prom = artifacts(tests["ai-service-metrics"])
    assert prom[f"Prometheus Query: DCGM_FI_DEV_GPU_UTIL"].startswith("Status: success\nTime series count: ")
    assert "groupVersion: custom.metrics.k8s.io/v1beta1" in prom["Custom Metrics API"]
    hpa = artifacts(tests["pod-autoscaling"])["HPA Behavioral Test"]
    assert "Deployment scaled down to: 1" in hpa and "Result: PASS" in hpa
    eks = artifacts(tests["cluster-autoscaling"])["EKS Cluster Autoscaling Result"]
    assert eks.startswith("PASS — EKS cluster with ") and "ASG-backed node group provides autoscaling" in eks
    # everything pod-autoscaling created is gone
    assert k8s_backend.list("v1", "Namespace", label_selector="aicr.run/run-id") == []


# -- helpers for scripted endpoints ------------------------------------------------------------------


def metrics_state(backend: K8sBackend) -> dict[str, Any]:
    """The metrics endpoints' scenario knobs (:mod:`aicr_pytest.testing.players.metrics`)."""
    if backend.virtual_time:
        from _facade_helpers import fake_of

        state: dict[str, Any] = fake_of(backend).state.setdefault("metrics", {})
        return state
    from tests.harness.backends import ControlPlaneBackend

    assert isinstance(backend, ControlPlaneBackend)
    endpoints = backend.session.player("metrics-endpoints")
    return endpoints.state  # type: ignore[no-any-return]


def apply_state(backend: K8sBackend) -> None:
    """Make routing follow the knobs now (the control plane's poller would within 0.2 s)."""
    if not backend.virtual_time:
        from tests.harness.backends import ControlPlaneBackend

        assert isinstance(backend, ControlPlaneBackend)
        backend.session.player("metrics-endpoints").tick()


@pytest.fixture
def knobs(k8s_backend: K8sBackend) -> Any:
    """The metrics endpoints' knobs for this test (cleared after it: the control plane is shared).
    Seed the profile before touching them."""

    class Knobs:
        def get(self) -> dict[str, Any]:
            return metrics_state(k8s_backend)

    yield Knobs()
    if not k8s_backend.virtual_time:
        metrics_state(k8s_backend).clear()
        apply_state(k8s_backend)


def only(check: str) -> dict[str, Any]:
    return recipe((check,))


# -- accelerator-metrics ---------------------------------------------------------------------------

MISSING_ALL = (
    "[NOT_FOUND] DCGM metrics missing: DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_GPU_TEMP, "
    "DCGM_FI_DEV_POWER_USAGE"
)


def test_accelerator_metrics_exporter_without_gpu_series_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["dcgm-exporter-no-gpu-series"])
    test = run_conformance(pytester, k8s_backend, only("accelerator-metrics"))["accelerator-metrics"]
    assert_outcome(test, "failed", MISSING_ALL)
    found = artifacts(test)
    assert "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %)." in found["DCGM Exporter Metrics (sample)"]
    assert found["Required DCGM Metrics"].count("MISSING") == 4


def test_accelerator_metrics_http_error_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, knobs: Any
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    knobs.get()["dcgm_status"] = 404
    test = run_conformance(pytester, k8s_backend, only("accelerator-metrics"))["accelerator-metrics"]
    assert_outcome(test, "failed", f"[INTERNAL] HTTP 404 from {DCGM_URL}/metrics")


def test_accelerator_metrics_oversize_body_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, knobs: Any
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    knobs.get()["dcgm_extra_bytes"] = 1 << 20
    test = run_conformance(pytester, k8s_backend, only("accelerator-metrics"))["accelerator-metrics"]
    assert_outcome(
        test, "failed", f"[INVALID_REQUEST] response from {DCGM_URL}/metrics exceeds 1048576 byte limit"
    )


def test_accelerator_metrics_unreachable_exporter_is_other(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, knobs: Any
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    knobs.get()["unreachable"] = ["dcgm"]
    apply_state(k8s_backend)
    test = run_conformance(pytester, k8s_backend, only("accelerator-metrics"))["accelerator-metrics"]
    assert test["status"] == "other", test
    message = test["message"]
    assert message.startswith(
        f"[SERVICE_UNAVAILABLE] failed to reach {DCGM_URL}/metrics: HTTP 503 from the API server: "
    )
    assert message.endswith(
        "(tried: GET /api/v1/namespaces/gpu-operator/services/nvidia-dcgm-exporter:9400/proxy/metrics "
        "(the API server's service proxy))"
    )


# -- ai-service-metrics ----------------------------------------------------------------------------

PROM_UNREACHABLE = (
    f"[SERVICE_UNAVAILABLE] Prometheus unreachable at {PROM_URL} — verify network connectivity "
    "(security groups, network policies) between validator pod and Prometheus service: "
)
PROM_ROUTE = (
    "(tried: GET /api/v1/namespaces/monitoring/services/kube-prometheus-stack-prometheus:9090/proxy/api/v1/"
    "query?query=DCGM_FI_DEV_GPU_UTIL (the API server's service proxy))"
)


def test_ai_service_metrics_prometheus_down_is_other_naming_url_and_route(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["prometheus-down"])
    test = run_conformance(pytester, k8s_backend, only("ai-service-metrics"))["ai-service-metrics"]
    assert test["status"] == "other", test
    assert test["message"].startswith(
        PROM_UNREACHABLE
        + f"[SERVICE_UNAVAILABLE] failed to reach {PROM_URL}/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL: "
        "HTTP 503 from the API server: "
    ), test["message"]
    assert test["message"].endswith(PROM_ROUTE)


def test_ai_service_metrics_no_gpu_series_fails_after_two_minutes(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["dcgm-exporter-no-gpu-series"])
    test = run_conformance(pytester, k8s_backend, only("ai-service-metrics"))["ai-service-metrics"]
    assert_outcome(
        test,
        "failed",
        "[NOT_FOUND] no DCGM_FI_DEV_GPU_UTIL time series in Prometheus after 2m0s — verify DCGM exporter is "
        "running and scraping GPU metrics",
    )
    assert (
        artifacts(test)["Prometheus Query: DCGM_FI_DEV_GPU_UTIL"] == "Status: success\nTime series count: 0"
    )


def test_ai_service_metrics_waits_for_series_to_appear(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, knobs: Any
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    state = knobs.get()
    state["prometheus_empty_queries"] = 3
    state["prometheus_queries"] = 0
    if not k8s_backend.virtual_time:
        from tests.harness.backends import ControlPlaneBackend

        assert isinstance(k8s_backend, ControlPlaneBackend)
        k8s_backend.session.player("metrics-endpoints").backend.prometheus_queries = 0
    else:
        from _facade_helpers import fake_of

        fake_of(k8s_backend).state["metrics_player"].prometheus_queries = 0
    test = run_conformance(pytester, k8s_backend, only("ai-service-metrics"))["ai-service-metrics"]
    assert_outcome(test, "passed")
    assert state["prometheus_queries"] == 4
    waits = [line for line in test["stdout"] if line.startswith("no DCGM_FI_DEV_GPU_UTIL time series yet")]
    assert len(waits) == 3, test["stdout"]


def test_ai_service_metrics_prometheus_error_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, knobs: Any
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    knobs.get()["prometheus_status"] = 500
    test = run_conformance(pytester, k8s_backend, only("ai-service-metrics"))["ai-service-metrics"]
    assert_outcome(
        test,
        "failed",
        PROM_UNREACHABLE + f"[INTERNAL] HTTP 500 from {PROM_URL}/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL",
    )


def test_ai_service_metrics_unparsable_answer_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, knobs: Any
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    knobs.get()["prometheus_body"] = "<html>not prometheus</html>"
    test = run_conformance(pytester, k8s_backend, only("ai-service-metrics"))["ai-service-metrics"]
    assert test["status"] == "failed"
    assert test["message"].startswith("[INTERNAL] failed to parse Prometheus response: ")


def test_ai_service_metrics_without_prometheus_component_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    doc = only("ai-service-metrics")
    doc["componentRefs"] = [r for r in doc["componentRefs"] if r["name"] != "kube-prometheus-stack"]
    test = run_conformance(pytester, k8s_backend, doc)["ai-service-metrics"]
    assert_outcome(
        test,
        "failed",
        '[NOT_FOUND] component "kube-prometheus-stack" not found in recipe or has no namespace',
    )


def test_ai_service_metrics_no_prometheus_service_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    doc = only("ai-service-metrics")
    empty = k8s_backend.namespace("metrics-elsewhere")
    for ref in doc["componentRefs"]:
        if ref["name"] == "kube-prometheus-stack":
            ref["namespace"] = empty
    test = run_conformance(pytester, k8s_backend, doc)["ai-service-metrics"]
    assert_outcome(
        test, "failed", f'[NOT_FOUND] no Prometheus service with port 9090 found in namespace "{empty}"'
    )


def test_ai_service_metrics_without_adapter_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["prometheus-adapter-missing"])
    test = run_conformance(pytester, k8s_backend, only("ai-service-metrics"))["ai-service-metrics"]
    assert_outcome(
        test,
        "failed",
        "[NOT_FOUND] custom metrics API not available — verify prometheus-adapter is deployed and healthy: "
        "the server could not find the requested resource",
    )
    assert artifacts(test)["Custom Metrics API"] == "HTTP status: 404\nStatus: unavailable"
