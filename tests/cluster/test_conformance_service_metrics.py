"""ai-service-metrics' inference-service step, on both backends (``k8s_backend``; helpers of
:mod:`test_conformance_phase2`): the inference profile serves a Dynamo model (a frontend and a
decode worker in ``dynamo-workload``) whose ``dynamo_*`` series Prometheus holds; the
``dynamo-metrics-missing`` fault takes them away; the training profile has no inference service,
so the step only records that. The check never skips (only the phase-level ``--no-cluster`` skip
applies, covered with every conformance check elsewhere)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from aicr_pytest.conformance import ai_service_metrics as asm
from aicr_pytest.conformance import service_metrics as sm
from aicr_pytest.core import yamlio
from tests.cluster.check_runner import run_on_backend
from tests.cluster.test_conformance_phase2 import PROM_UNREACHABLE, PROM_URL, artifacts, assert_outcome, only
from tests.cluster.test_conformance_phase2 import run_conformance as run_training
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-inference.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-inference-snapshot.yaml"
CHECK = "ai-service-metrics"
NOT_FOUND = (
    "[NOT_FOUND] no inference-service time series in Prometheus after 2m0s for the Dynamo workload in "
    f"dynamo-workload (query {sm.DYNAMO_QUERY}) — verify its metrics endpoints are scraped "
    "(PodMonitor or ServiceMonitor)"
)


def inference_recipe() -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    doc["validation"] = copy.deepcopy(doc.get("validation") or {})
    doc["validation"]["conformance"] = {"checks": [CHECK]}
    return doc


def run_inference(pytester: pytest.Pytester, backend: K8sBackend) -> dict[str, Any]:
    drive = None
    if backend.virtual_time:
        from _facade_helpers import fake_of

        drive = fake_of(backend).auto_advancing()
    run = run_on_backend(
        pytester, backend, phase="conformance", recipe=inference_recipe(), snapshot=SNAPSHOT, drive=drive
    )
    assert backend.controller_errors() == []
    return run.tests[CHECK]


def workload(backend: K8sBackend) -> str:
    """The seeded Dynamo workload as the evidence names it (pod names differ per backend)."""
    pods = backend.list("v1", "Pod", "dynamo-workload")
    names = {
        str(p["metadata"]["labels"][sm.DYNAMO_COMPONENT_LABEL]): str(p["metadata"]["name"]) for p in pods
    }
    assert len(pods) == 2, names
    return f"Dynamo in dynamo-workload (worker pods: {names['worker']}; frontend pods: {names['frontend']})"


def test_dynamo_series_pass_with_evidence(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-inference")
    test = run_inference(pytester, k8s_backend)
    assert_outcome(test, "passed")
    found = artifacts(test)
    assert found[asm.INFERENCE_LABEL] == (
        f"Workload: {workload(k8s_backend)}\n"
        f"Query: {sm.DYNAMO_QUERY}\n"
        "Status: success\n"
        "Time series count: 6\n"
        "Metric names: dynamo_component_inflight_requests, dynamo_component_request_duration_seconds_count, "
        "dynamo_component_requests_total, dynamo_frontend_inflight_requests, dynamo_frontend_requests_total "
        "(and 1 more)"
    )
    # the GPU series and the custom metrics API are still checked, first
    labels = list(found)
    assert labels.index("Custom Metrics API") < labels.index(asm.INFERENCE_LABEL)
    assert found["Prometheus Query: DCGM_FI_DEV_GPU_UTIL"].startswith("Status: success\nTime series count: ")
    assert f"inference service: {workload(k8s_backend)}" in test["stdout"]


def test_dynamo_metrics_missing_fails_naming_workload_and_query(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-inference", ["dynamo-metrics-missing"])
    test = run_inference(pytester, k8s_backend)
    assert_outcome(test, "failed", NOT_FOUND)
    assert artifacts(test)[asm.INFERENCE_LABEL] == (
        f"Workload: {workload(k8s_backend)}\nQuery: {sm.DYNAMO_QUERY}\nStatus: success\nTime series count: 0"
    )
    waits = [line for line in test["stdout"] if line.startswith(f"no {sm.DYNAMO_QUERY} time series yet")]
    # every 10 s for 2 min: 0 s, 10 s, ..., 120 s (real time also passes on the control plane)
    assert waits[0].endswith("(attempt 1); retrying in 10s")
    assert len(waits) == 13 if k8s_backend.virtual_time else 12 <= len(waits) <= 13, test["stdout"]


def test_no_inference_service_keeps_the_verdict(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-training")
    test = run_training(pytester, k8s_backend, only(CHECK))[CHECK]
    assert_outcome(test, "passed")
    found = artifacts(test)
    assert found[asm.INFERENCE_LABEL] == sm.NO_WORKLOAD
    assert list(found)[-1] == asm.INFERENCE_LABEL


def test_no_inference_service_keeps_a_failed_verdict(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    """No workload adds nothing to the verdict: a missing adapter still fails with its own message
    (and the step, after it, does not run)."""
    k8s_backend.seed_profile("h100-eks-training", ["prometheus-adapter-missing"])
    test = run_training(pytester, k8s_backend, only(CHECK))[CHECK]
    assert test["status"] == "failed"
    assert test["message"].startswith("[NOT_FOUND] custom metrics API not available")
    assert asm.INFERENCE_LABEL not in artifacts(test)


def on_dynamo_query(backend: K8sBackend, before: Callable[[], tuple[int, str] | None]) -> None:
    """On the fake: run ``before`` when the Dynamo query arrives; its answer (if any) replaces
    Prometheus's."""
    from _facade_helpers import fake_of

    fake = fake_of(backend)
    original = fake.state["metrics_player"].prometheus

    def answer(method: str, path: str, body: bytes) -> tuple[int, str]:
        scripted = before() if "dynamo_" in path else None
        result: tuple[int, str] = scripted or original(method, path, body)
        return result

    fake.server.proxy_handlers[("monitoring", "kube-prometheus-stack-prometheus")] = answer


@pytest.mark.fake_only("a scripted Prometheus answer for the Dynamo query only")
def test_prometheus_error_during_the_step_fails_as_the_gpu_step(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile("h100-eks-inference")
    on_dynamo_query(k8s_backend, lambda: (500, '{"status": "error", "error": "injected"}'))
    test = run_inference(pytester, k8s_backend)
    url = f"{PROM_URL}/api/v1/query?{urlencode({'query': sm.DYNAMO_QUERY})}"
    assert_outcome(test, "failed", PROM_UNREACHABLE + f"[INTERNAL] HTTP 500 from {url}")
    assert artifacts(test)["Custom Metrics API"].startswith("HTTP status: 200")
    assert asm.INFERENCE_LABEL not in artifacts(test)


@pytest.mark.fake_only("Prometheus goes away between the GPU step and the inference step")
def test_prometheus_unreachable_during_the_step_is_other(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile("h100-eks-inference")
    knobs = fake_of(k8s_backend).state["metrics"]
    on_dynamo_query(k8s_backend, lambda: knobs.update(unreachable=["prometheus"]))
    test = run_inference(pytester, k8s_backend)
    assert test["status"] == "other", test
    assert test["message"].startswith(PROM_UNREACHABLE + f"[SERVICE_UNAVAILABLE] failed to reach {PROM_URL}")


@pytest.mark.fake_only("adds a NIM pod to the training profile")
def test_a_nim_service_without_series_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    from _facade_helpers import fake_of

    k8s_backend.seed_profile("h100-eks-training")
    fake = fake_of(k8s_backend)
    fake.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nim-workload"}})
    labels = {"app.kubernetes.io/managed-by": "k8s-nim-operator"}
    fake.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llama", "namespace": "nim-workload",
              "labels": labels}, "spec": {"containers": [{"name": "nim", "image": "nim"}]}})  # fmt: skip
    test = run_training(pytester, k8s_backend, only(CHECK))[CHECK]
    assert_outcome(
        test,
        "failed",
        "[NOT_FOUND] no inference-service time series in Prometheus after 2m0s for the NIM workload in "
        f"nim-workload (query {sm.NIM_QUERY}) — verify its metrics endpoints are scraped "
        "(PodMonitor or ServiceMonitor)",
    )
    assert artifacts(test)[asm.INFERENCE_LABEL].startswith("Workload: NIM in nim-workload (pods: llama)\n")
