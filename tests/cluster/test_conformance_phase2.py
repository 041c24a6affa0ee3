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

import contextlib
import copy
import json
import time
import urllib.error
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


#: a coherent chart for extra component refs (load-time coherence)
CHART = {"source": "https://charts.example.com", "version": "1.0.0"}

AGENTGATEWAY = {"name": "agentgateway", "namespace": "agentgateway-system", "type": "Helm", **CHART}
SLINKY = {"name": "slinky-slurm", "namespace": "slurm", "type": "Helm", **CHART}


def run_conformance(
    pytester: pytest.Pytester, backend: K8sBackend, doc: dict[str, Any], *extra: str, denials: bool = False
) -> dict[str, dict[str, Any]]:
    """Run the conformance phase of ``doc`` as the least-privilege user; no check may be refused by
    RBAC unless the scenario injects the refusal (``denials``)."""
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    if denials:
        from tests.cluster.check_runner import backend_args, run_phase

        run: PhaseRun = run_phase(
            pytester,
            phase="conformance",
            recipe=doc,
            snapshot=SNAPSHOT,
            kubeconfig=backend.restricted_kubeconfig_path,
            clock=backend.check_clock,
            extra=backend_args(backend, extra),
            drive=drive,
        )
    else:
        run = run_on_backend(
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
    assert prom["Prometheus Query: DCGM_FI_DEV_GPU_UTIL"].startswith("Status: success\nTime series count: ")
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


def group_not_served(backend: K8sBackend) -> str:
    """What the API server answers for a group/version nothing serves (the real one: plain text)."""
    if backend.virtual_time:
        return "the server could not find the requested resource"
    return "404 page not found"


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
        + group_not_served(k8s_backend),
    )
    assert artifacts(test)["Custom Metrics API"] == "HTTP status: 404\nStatus: unavailable"


# -- inference-gateway -------------------------------------------------------------------------------

GATEWAY_PROFILE = "h100-eks-inference-gateway"
OPEN_MESSAGE = gw.exposure_message(["inference-gateway"])


def gateway_recipe() -> dict[str, Any]:
    return recipe(("inference-gateway",), extra_refs=(AGENTGATEWAY,))


def test_inference_gateway_scoped_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(GATEWAY_PROFILE)
    test = run_conformance(pytester, k8s_backend, gateway_recipe())["inference-gateway"]
    assert_outcome(test, "passed")
    found = artifacts(test)
    assert found["Inference Gateway Exposure"] == (
        "agentgateway-system/inference-gateway: type=LoadBalancer sourceRanges=['10.0.0.0/8']"
    )
    assert "Inference Gateway Exposure WARNING" not in found
    assert found["Required CRDs"].splitlines() == [f"{name}: present" for name in gw.REQUIRED_CRDS]
    assert "Ready endpoints: 1" in found["Gateway Data Plane"]
    assert "Accepted: True" in found["GatewayClass"]


@pytest.mark.parametrize("env", [None, "yes", "0"])
def test_inference_gateway_open_is_a_warning_by_default(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, monkeypatch: pytest.MonkeyPatch, env: str | None
) -> None:
    if env is None:
        monkeypatch.delenv(gw.SCOPED_ENV, raising=False)
    else:
        monkeypatch.setenv(gw.SCOPED_ENV, env)  # not truthy for Go's ParseBool
    k8s_backend.seed_profile(GATEWAY_PROFILE, ["gateway-open"])
    test = run_conformance(pytester, k8s_backend, gateway_recipe())["inference-gateway"]
    assert_outcome(test, "passed")
    found = artifacts(test)
    assert found["Inference Gateway Exposure"] == (
        "agentgateway-system/inference-gateway: type=LoadBalancer sourceRanges=<empty> (OPEN to 0.0.0.0/0)"
    )
    assert found["Inference Gateway Exposure WARNING"].startswith(f"WARNING: {OPEN_MESSAGE}\n")


@pytest.mark.parametrize("env", ["true", "1", "T", " TRUE "])
def test_inference_gateway_open_fails_when_scoping_is_required(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, monkeypatch: pytest.MonkeyPatch, env: str
) -> None:
    monkeypatch.setenv(gw.SCOPED_ENV, env)
    k8s_backend.seed_profile(GATEWAY_PROFILE, ["gateway-open"])
    test = run_conformance(pytester, k8s_backend, gateway_recipe())["inference-gateway"]
    assert_outcome(test, "failed", f"[INVALID_REQUEST] {OPEN_MESSAGE}")


def test_inference_gateway_missing_gateway_class_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training")  # no gateway: the recipe still declares agentgateway
    test = run_conformance(pytester, k8s_backend, gateway_recipe())["inference-gateway"]
    assert test["status"] == "failed", test
    assert test["message"].startswith("[NOT_FOUND] GatewayClass 'agentgateway' not found: ")


@pytest.mark.fake_only("writes the GatewayClass status a controller owns")
def test_inference_gateway_class_not_accepted_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile(GATEWAY_PROFILE)
    fc = fake_of(k8s_backend)
    fc.sim.set_status(
        "gateway.networking.k8s.io/v1",
        "GatewayClass",
        "agentgateway",
        {
            "conditions": [
                {"type": "Accepted", "status": "False", "reason": "InvalidParameters", "message": ""}
            ]
        },
    )
    test = run_conformance(pytester, k8s_backend, gateway_recipe())["inference-gateway"]
    assert_outcome(
        test,
        "failed",
        "[INTERNAL] GatewayClass not accepted: status=False reason=InvalidParameters message=unknown",
    )


@pytest.mark.fake_only("removes the EndpointSlice the real EndpointSlice controller would recreate")
def test_inference_gateway_without_ready_endpoints_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile(GATEWAY_PROFILE)
    fc = fake_of(k8s_backend)
    for sl in fc.list("discovery.k8s.io/v1", "EndpointSlice", "agentgateway-system"):
        fc.delete("discovery.k8s.io/v1", "EndpointSlice", sl["metadata"]["name"], "agentgateway-system")
    test = run_conformance(pytester, k8s_backend, gateway_recipe())["inference-gateway"]
    assert_outcome(
        test, "failed", "[INTERNAL] no ready endpoints for inference-gateway proxy in agentgateway-system"
    )


@pytest.mark.fake_only("HTTP fault injection: the Services list is refused")
@pytest.mark.parametrize("enforce", [False, True])
def test_inference_gateway_services_list_error(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, monkeypatch: pytest.MonkeyPatch, enforce: bool
) -> None:
    from _facade_helpers import fake_of

    monkeypatch.setenv(gw.SCOPED_ENV, "true" if enforce else "false")
    k8s_backend.seed_profile(GATEWAY_PROFILE)
    fake_of(k8s_backend).faults.deny(path=r"^/api/v1/namespaces/agentgateway-system/services$", times=None)
    test = run_conformance(pytester, k8s_backend, gateway_recipe(), denials=True)["inference-gateway"]
    if enforce:
        assert test["status"] == "other", test
        assert test["message"].startswith(
            "[INTERNAL] failed to list Services for gateway exposure assessment under "
            "AICR_REQUIRE_SCOPED_INFERENCE_GATEWAY=true: RBAC denied"
        )
    else:
        assert_outcome(test, "passed")
        assert "Advisory finding skipped (non-fatal)" in artifacts(test)["Inference Gateway Exposure"]


# -- pod-autoscaling ---------------------------------------------------------------------------------


def test_pod_autoscaling_without_dcgm_exporter_skips(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["gpu-operator-missing"])
    test = run_conformance(pytester, k8s_backend, only("pod-autoscaling"))["pod-autoscaling"]
    assert_outcome(test, "skipped", "DCGM exporter not found — GPU metrics not available for HPA")


def test_pod_autoscaling_without_external_metric_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["dcgm-exporter-no-gpu-series"])
    test = run_conformance(pytester, k8s_backend, only("pod-autoscaling"))["pod-autoscaling"]
    assert_outcome(
        test,
        "failed",
        "[NOT_FOUND] external metric dcgm_gpu_power_usage not available: [NOT_FOUND] external metric "
        "dcgm_gpu_power_usage has no data",
    )
    assert "Pod-scoped GPU custom metrics not available" in artifacts(test)["Custom metric sample"]


def test_pod_autoscaling_without_adapter_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["prometheus-adapter-missing"])
    test = run_conformance(pytester, k8s_backend, only("pod-autoscaling"))["pod-autoscaling"]
    assert_outcome(
        test,
        "failed",
        "[NOT_FOUND] custom metrics API not available (prometheus-adapter not ready): "
        + group_not_served(k8s_backend),
    )


@pytest.mark.fake_only(
    "the real HPA controller cannot be told to ignore its metric; waits 3 min in real time"
)
def test_pod_autoscaling_hpa_never_scaling_fails_and_cleans_up(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["hpa-never-scales"])
    test = run_conformance(pytester, k8s_backend, only("pod-autoscaling"))["pod-autoscaling"]
    assert_outcome(
        test,
        "failed",
        "[TIMEOUT] HPA did not report scaling intent within timeout — metrics pipeline may be broken: "
        "desiredReplicas=1 currentReplicas=1 after 3m0s",
    )
    assert k8s_backend.list("v1", "Namespace", label_selector="aicr.run/run-id") == []
    assert k8s_backend.list("autoscaling/v2", "HorizontalPodAutoscaler") == []


INTERRUPTING_CONFTEST = """
import pytest
from tests.cluster import shared_clock

class InterruptingClock:
    def __init__(self, inner, flag):
        self.inner, self.flag = inner, flag

    def time(self):
        if self.flag and self.flag.pop():
            raise KeyboardInterrupt("simulated Ctrl-C")
        return self.inner.time()

    def sleep(self, seconds):
        self.inner.sleep(seconds)

@pytest.fixture(scope="session")
def aicr_clock():
    return InterruptingClock(shared_clock.CURRENT[0], shared_clock.CURRENT[1])
"""


@pytest.mark.fake_only("interrupts the check from a simulator hook")
def test_pod_autoscaling_ctrl_c_cleans_up(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    from _facade_helpers import fake_of

    from aicr_pytest.testing import Obj, Simulator
    from tests.cluster import shared_clock
    from tests.cluster.check_runner import run_phase

    k8s_backend.seed_profile("h100-eks-training")
    fc = fake_of(k8s_backend)
    flag: list[bool] = []
    seen: dict[str, str] = {}

    def interrupt_on_scaling(sim: Simulator, hpa: Obj) -> None:
        status = hpa.get("status") or {}
        if not seen and int(status.get("desiredReplicas") or 0) > int(status.get("currentReplicas") or 0):
            seen["ns"] = hpa["metadata"]["namespace"]
            flag.append(True)  # the check's next clock read raises KeyboardInterrupt

    fc.sim.on_update("autoscaling", "v2", "horizontalpodautoscalers", interrupt_on_scaling)
    run = run_phase(
        pytester,
        phase="conformance",
        recipe=only("pod-autoscaling"),
        snapshot=SNAPSHOT,
        kubeconfig=fc.kubeconfig_path,
        clock=shared_clock.ClusterClock(fc),
        drive=fc.auto_advancing(),
        conftest=INTERRUPTING_CONFTEST,
        shared=[flag],
    )
    assert run.result.ret == pytest.ExitCode.INTERRUPTED
    assert seen["ns"].startswith("hpa-test-") and not flag
    assert fc.find("v1", "Namespace", seen["ns"]) is None
    assert fc.list("apps/v1", "Deployment", seen["ns"]) == []


# -- cluster-autoscaling -----------------------------------------------------------------------------


def test_cluster_autoscaling_karpenter_scales_up_gpu_nodes(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-training-karpenter")
    try:
        test = run_conformance(pytester, k8s_backend, only("cluster-autoscaling"))["cluster-autoscaling"]
        assert_outcome(test, "passed")
        found = artifacts(test)
        assert found["GPU NodePools (filtered)"] == "gpu-autoscaling-test"
        behaviour = found["Cluster Autoscaling Behavioral Test"]
        assert "NodePool: gpu-autoscaling-test" in behaviour and "NodePool nodes: 0 -> 1" in behaviour
        assert "Result: PASS" in behaviour
        assert k8s_backend.list("v1", "Namespace", label_selector="aicr.run/run-id") == []
    finally:
        if not k8s_backend.virtual_time:
            from tests.harness.backends import ControlPlaneBackend

            assert isinstance(k8s_backend, ControlPlaneBackend)
            k8s_backend.session.player("karpenter-controller").remove_nodes()


def test_cluster_autoscaling_unhealthy_karpenter_fails(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    if not k8s_backend.virtual_time:
        pytest.skip("an unavailable Deployment cannot be seeded: the real controllers make it available")
    k8s_backend.seed_profile("h100-eks-training-karpenter", ["karpenter-unhealthy"])
    test = run_conformance(pytester, k8s_backend, only("cluster-autoscaling"))["cluster-autoscaling"]
    assert_outcome(test, "failed", "[INTERNAL] Karpenter deployment exists but is unhealthy: 0/1 available")


@pytest.mark.fake_only("the shared control plane's kwok nodes keep their node-group labels")
def test_cluster_autoscaling_no_node_group_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training", ["no-managed-node-group"])
    test = run_conformance(pytester, k8s_backend, only("cluster-autoscaling"))["cluster-autoscaling"]
    assert_outcome(
        test,
        "failed",
        "[NOT_FOUND] EKS GPU nodes found but no node group label or Cluster Autoscaler detected — cannot "
        "verify autoscaling capability",
    )


@pytest.mark.fake_only("the control plane's kwok nodes carry EKS provider IDs")
def test_cluster_autoscaling_unknown_platform_skips(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile("h100-eks-training")
    fc = fake_of(k8s_backend)
    rt = fc.store.resolve("v1", "Node")
    for node in fc.list("v1", "Node"):
        fc.store.mutate(rt, None, node["metadata"]["name"], lambda n: n["spec"].pop("providerID", None))
    test = run_conformance(pytester, k8s_backend, only("cluster-autoscaling"))["cluster-autoscaling"]
    assert_outcome(
        test, "skipped", "Karpenter not found and cluster platform not recognized (not EKS or GKE)"
    )


@pytest.mark.fake_only("the GKE profile is not seeded on the control plane")
def test_cluster_autoscaling_gke_passes_partially(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-gke-training")
    test = run_conformance(pytester, k8s_backend, only("cluster-autoscaling"))["cluster-autoscaling"]
    assert_outcome(test, "passed")
    result = artifacts(test)["GKE Cluster Autoscaling Result"]
    assert result.startswith("PASS (partial) — GKE cluster with 4 GPU nodes")


# -- Slinky ------------------------------------------------------------------------------------------

SLURM_PROFILE = "gb200-eks-training-slurm"
SLINKY_CHECKS = ("slinky-slurm-health", "slinky-slurm-imex-channel")


def slinky_recipe() -> dict[str, Any]:
    return recipe(SLINKY_CHECKS, extra_refs=(SLINKY,))


@pytest.fixture
def slurm(k8s_backend: K8sBackend) -> Any:
    """Slinky on the backend with its NodeSet on a non-KWOK node (on the control plane: a Node no
    kubelet runs, its NodeSet pod bound there; the login pod is a kwok pod whose ``pods/exec`` kwok
    runs with the harness's fake Slurm commands). ``slurm.mode(m)`` sets the Slurm mode."""
    k8s_backend.seed_profile(SLURM_PROFILE)
    if k8s_backend.virtual_time:

        class FakeSlurm:
            def mode(self, mode: str) -> None:
                from _facade_helpers import fake_of

                from aicr_pytest.testing.players import slinky as player

                faults = {"down": [player.FAULT_CONTROLLER_DOWN], "imex-shared": [player.FAULT_IMEX_SHARED]}
                fc = fake_of(k8s_backend)
                profile = fc.profile
                assert profile is not None
                profile.faults = faults.get(mode, [])
                player.install(fc, profile)

        yield FakeSlurm()
        return
    from tests.harness.backends import ControlPlaneBackend
    from tests.harness.controlplane_conformance_ii import slurm_exec

    assert isinstance(k8s_backend, ControlPlaneBackend)
    cp = k8s_backend.cp
    node = f"slurm-worker-{k8s_backend.run_id}"
    k8s_backend.seed([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}])
    pod = f"slinky-slurm-gpu-worker-{k8s_backend.run_id}"
    cp.request(
        "POST",
        "/api/v1/namespaces/slurm/pods",
        {
            "metadata": {
                "name": pod,
                "labels": {
                    "app.kubernetes.io/name": "slurmd",
                    "app.kubernetes.io/instance": "slinky-slurm-gpu",
                },
            },
            "spec": {
                "nodeName": node,
                "containers": [{"name": "slurmd", "image": "ghcr.io/slinkyproject/slurmd"}],
            },
        },
    )

    class RealSlurm:
        def __init__(self) -> None:
            self.exec = slurm_exec(cp, "slurm")

        def mode(self, mode: str) -> None:
            self.exec = slurm_exec(cp, "slurm", mode)
            time.sleep(1.0)  # kwok's informer picks the ClusterExec up

    real = RealSlurm()
    time.sleep(1.0)
    try:
        yield real
    finally:
        with contextlib.suppress(urllib.error.HTTPError):
            cp.request("DELETE", f"/api/v1/namespaces/slurm/pods/{pod}?gracePeriodSeconds=0")
        with contextlib.suppress(urllib.error.HTTPError):
            cp.request("DELETE", f"/apis/kwok.x-k8s.io/v1alpha1/clusterexecs/{real.exec}")


def test_slinky_checks_pass_on_a_healthy_slurm(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, slurm: Any
) -> None:
    tests = run_conformance(pytester, k8s_backend, slinky_recipe())
    assert_outcome(tests["slinky-slurm-health"], "passed")
    found = artifacts(tests["slinky-slurm-health"])
    assert (
        "Slinky Slurm scontrol ping result" in found and "is UP" in found["Slinky Slurm scontrol ping result"]
    )
    assert found["Selected Slinky Slurm login pod"].startswith("slurm/slinky-slurm-login-0 (container login")
    assert_outcome(tests["slinky-slurm-imex-channel"], "passed")
    channels = artifacts(tests["slinky-slurm-imex-channel"])["Slinky Slurm IMEX channels"]
    assert sorted(channels.splitlines()) == [
        "first=/dev/nvidia-caps-imex-channels/channel0",
        "second=/dev/nvidia-caps-imex-channels/channel1",
    ] or sorted(channels.splitlines()) == [
        "first=/dev/nvidia-caps-imex-channels/channel1",
        "second=/dev/nvidia-caps-imex-channels/channel0",
    ]


def test_slinky_controller_down_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend, slurm: Any) -> None:
    slurm.mode("down")
    tests = run_conformance(pytester, k8s_backend, slinky_recipe())
    health = tests["slinky-slurm-health"]
    assert health["status"] == "failed", health
    lines = health["message"].splitlines()
    assert lines[0] == "[INTERNAL] Slinky Slurm health commands failed:"
    assert [line.split(":", 1)[0] for line in lines[1:]] == [
        "scontrol ping",
        "sinfo idle/mix",
        "srun hostname",
    ]
    if k8s_backend.virtual_time:  # kwok reports a failed local command without its exit code
        assert lines[1:] == [
            "scontrol ping: exit code 1",
            "sinfo idle/mix: exit code 1",
            "srun hostname: exit code 1",
        ]
        assert_outcome(
            tests["slinky-slurm-imex-channel"],
            "failed",
            "[INTERNAL] concurrent Slinky Slurm IMEX jobs: exit code 1",
        )
    else:
        assert all(": exec failed: " in line for line in lines[1:]), lines
        assert tests["slinky-slurm-imex-channel"]["message"].startswith(
            "[INTERNAL] failed to run concurrent Slinky Slurm IMEX jobs: "
        )


def test_slinky_imex_jobs_sharing_a_channel_fail(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, slurm: Any
) -> None:
    slurm.mode("imex-shared")
    test = run_conformance(
        pytester, k8s_backend, recipe(("slinky-slurm-imex-channel",), extra_refs=(SLINKY,))
    )
    assert_outcome(
        test["slinky-slurm-imex-channel"],
        "failed",
        "[INTERNAL] concurrent Slurm jobs received the same IMEX channel "
        '"/dev/nvidia-caps-imex-channels/channel0"',
    )


def test_slinky_nodeset_on_kwok_nodes_skips(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(SLURM_PROFILE)
    if k8s_backend.virtual_time:  # the fake's nodes are no kwok nodes: mark them as kwok would
        from _facade_helpers import fake_of

        fc = fake_of(k8s_backend)
        rt = fc.store.resolve("v1", "Node")
        for node in fc.list("v1", "Node"):
            fc.store.mutate(
                rt,
                None,
                node["metadata"]["name"],
                lambda n: n["metadata"].setdefault("annotations", {}).update({"kwok.x-k8s.io/node": "fake"}),
            )
    tests = run_conformance(pytester, k8s_backend, slinky_recipe())
    for name in SLINKY_CHECKS:
        assert_outcome(
            tests[name], "skipped", "Slinky NodeSet pods are on KWOK nodes; skipping Slurm health validation"
        )


def test_slinky_without_slurm_api_skips(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    if not k8s_backend.virtual_time:
        pytest.skip("the control plane serves every profile's CRDs from the start")
    k8s_backend.seed_profile("h100-eks-training")
    tests = run_conformance(pytester, k8s_backend, slinky_recipe())
    for name in SLINKY_CHECKS:
        assert_outcome(tests[name], "skipped", "Slinky Slurm API not available")
