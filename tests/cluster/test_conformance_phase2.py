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


def recipe(checks: tuple[str, ...] = PHASE2, *, extra_refs: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
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
        for m in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
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
