"""Every implemented check's requests, judged by a real authorizer as the least-privilege user.

Each check runs green on the fake cluster (through pytester, like its own scenario tests); every
request the fake served during the run is then replayed as a ``SelfSubjectAccessReview`` by the
user the control plane binds to ``deploy/rbac.yaml`` only. A denial is a red test naming the
request: the check would get a 403 on a cluster where aicr-pytest has exactly that manifest.

Every implemented check also runs end to end on the control plane as that user: the deployment
checks and check-nvidia-smi (tests/cluster/test_deployment_checks.py), the conformance phase-I checks
(tests/cluster/test_conformance_checks.py: the operators' webhooks, KAI's gang binder and the GPU probe
pods played by tests/harness/controlplane_conformance.py), ``nccl-all-reduce-bw`` on H100
(tests/controlplane/test_checks_on_controlplane.py), the GB200 NCCL variants ``-net`` and ``-nvls``
(tests/controlplane/test_gb200_on_controlplane.py: kwok GB200 pool, ComputeDomain test controller, real
DRA allocation of the IMEX channel claims), ``inference-perf``
(tests/controlplane/test_inference_on_controlplane.py: Dynamo operator, volume provisioner and AIPerf
played by test controllers; the probe goes through the apiserver's service proxy and its egress) and the
phase-II conformance checks (tests/cluster/test_conformance_phase2.py: metrics endpoints behind the real
service proxy and aggregation layer, the real HPA controller, Karpenter and Slurm through kwok exec
played by test controllers). This replay also covers the NCCL paths with no kwok pool on the control
plane (GKE/TCPXO, RoCE on EKS).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _facade_helpers import clock_driver

import aicr_pytest.core.constraints
import aicr_pytest.core.inputs
import aicr_pytest.deployment.fetch
import aicr_pytest.deployment.nvidia_smi
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest.core import yamlio
from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster import shared_clock
from tests.cluster.test_nccl_check import SNAPSHOT as NCCL_SNAPSHOT
from tests.cluster.test_nccl_paths import gke_recipe, roce_recipe
from tests.harness.authz import denied, request_attributes
from tests.harness.controlplane import ControlPlane

REPO = Path(__file__).resolve().parents[2]
#: a coherent chart for extra component refs (load-time coherence)
CHART = {"source": "https://charts.example.com", "version": "1.0.0"}
EXAMPLES = REPO / "recipes" / "examples"
CONFTEST = """
import pytest
from tests.cluster import shared_clock

@pytest.fixture(scope="session")
def aicr_clock():
    return shared_clock.CURRENT[0]
"""


def training_recipe() -> Path:
    return EXAMPLES / "h100-eks-training.yaml"


def gb200_recipe(tmp: Path) -> Path:
    recipe: dict[str, Any] = yamlio.load(training_recipe().read_text())
    recipe["criteria"]["accelerator"] = "gb200"
    checks = ["nccl-all-reduce-bw-net", "nccl-all-reduce-bw-nvls"]
    recipe["validation"]["performance"] = {
        "checks": checks,
        "constraints": [{"name": checks[0], "value": ">= 40"}, {"name": checks[1], "value": ">= 500"}],
    }
    path = tmp / "gb200.yaml"
    path.write_text(yamlio.dump(recipe))
    return path


def dynamo_robust_recipe() -> dict[str, Any]:
    """The training recipe with Dynamo enabled: robust-controller takes the Dynamo path."""
    recipe: dict[str, Any] = yamlio.load(training_recipe().read_text())
    recipe["componentRefs"].append(
        {"name": "dynamo-platform", "namespace": "dynamo-system", "type": "Helm", **CHART}
    )
    recipe["validation"] = {"conformance": {"checks": ["robust-controller"]}}
    return recipe


#: the phase-II conformance checks a training cluster has the prerequisites of
CONFORMANCE_II_TRAINING = (
    "accelerator-metrics",
    "ai-service-metrics",
    "pod-autoscaling",
    "cluster-autoscaling",
)


#: scenario id -> (profile, phase, recipe(tmp), snapshot, checks that must pass on the fake)
SCENARIOS: dict[str, tuple[str, str, Callable[[Path], Path], Path, tuple[str, ...]]] = {
    "deployment": (
        "h100-eks-training",
        "deployment",
        lambda tmp: training_recipe(),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("operator-health", "gpu-operator-version", "expected-resources", "check-nvidia-smi"),
    ),
    "nccl-h100": (
        "h100-eks-training",
        "performance",
        lambda tmp: training_recipe(),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("nccl-all-reduce-bw",),
    ),
    "nccl-gb200": (
        "gb200-eks-training",
        "performance",
        gb200_recipe,
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("nccl-all-reduce-bw-net", "nccl-all-reduce-bw-nvls"),
    ),
    "nccl-gke-tcpxo": (
        "h100-gke-training",
        "performance",
        lambda tmp: written(tmp, "gke.yaml", gke_recipe()),
        NCCL_SNAPSHOT,
        ("nccl-all-reduce-bw",),
    ),
    "nccl-roce": (
        "gb300-eks-roce-training",
        "performance",
        lambda tmp: written(tmp, "roce.yaml", roce_recipe()),
        NCCL_SNAPSHOT,
        ("nccl-all-reduce-bw-net",),
    ),
    "cre": (
        "h100-eks-training-cre",
        "performance",
        lambda tmp: written(tmp, "cre.yaml", cre_recipe()),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("nccl-cre-all-reduce-bw", "cre-training-goodput"),
    ),
    "conformance": (
        "h100-eks-training",
        "conformance",
        lambda tmp: training_recipe(),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        (
            "dra-support",
            "gang-scheduling",
            "robust-controller",
            "secure-accelerator-access",
            "gpu-operator-health",
            "platform-health",
        ),
    ),
    "conformance-dra": (
        "h100-eks-training-dra",
        "conformance",
        lambda tmp: EXAMPLES / "h100-eks-training-dra.yaml",
        EXAMPLES / "h100-eks-training-dra-snapshot.yaml",
        ("dra-support", "secure-accelerator-access"),
    ),
    "conformance-dynamo": (
        "h100-eks-inference",
        "conformance",
        lambda tmp: written(tmp, "dynamo.yaml", dynamo_robust_recipe()),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("robust-controller",),
    ),
    "inference": (
        "h100-eks-inference",
        "performance",
        lambda tmp: EXAMPLES / "h100-eks-inference.yaml",
        EXAMPLES / "h100-eks-inference-snapshot.yaml",
        ("inference-perf",),
    ),
    "conformance-ii": (
        "h100-eks-training",
        "conformance",
        lambda tmp: conformance_recipe(tmp, CONFORMANCE_II_TRAINING),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        CONFORMANCE_II_TRAINING,
    ),
    "conformance-ii-karpenter": (
        "h100-eks-training-karpenter",
        "conformance",
        lambda tmp: conformance_recipe(tmp, ("cluster-autoscaling",)),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("cluster-autoscaling",),
    ),
    "conformance-ii-gateway": (
        "h100-eks-inference-gateway",
        "conformance",
        lambda tmp: conformance_recipe(
            tmp, ("inference-gateway",), {"name": "agentgateway", "type": "Helm", **CHART}
        ),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("inference-gateway",),
    ),
    "conformance-ii-slinky": (
        "gb200-eks-training-slurm",
        "conformance",
        lambda tmp: conformance_recipe(
            tmp,
            ("slinky-slurm-health", "slinky-slurm-imex-channel"),
            {"name": "slinky-slurm", "namespace": "slurm", "type": "Helm", **CHART},
        ),
        EXAMPLES / "h100-eks-training-snapshot.yaml",
        ("slinky-slurm-health", "slinky-slurm-imex-channel"),
    ),
}

#: the phase-II conformance checks a training cluster has the prerequisites of
CONFORMANCE_II_TRAINING = (
    "accelerator-metrics",
    "ai-service-metrics",
    "pod-autoscaling",
    "cluster-autoscaling",
)


def cre_recipe() -> dict[str, Any]:
    recipe: dict[str, Any] = yamlio.load(training_recipe().read_text())
    checks = {"nccl-cre-all-reduce-bw": ">= 450", "cre-training-goodput": ">= 0.7"}
    recipe["validation"]["performance"] = {
        "checks": list(checks),
        "constraints": [{"name": k, "value": v} for k, v in checks.items()],
    }
    return recipe


def conformance_recipe(tmp: Path, checks: tuple[str, ...], *refs: dict[str, Any]) -> Path:
    recipe: dict[str, Any] = yamlio.load(training_recipe().read_text())
    recipe["validation"]["conformance"] = {"checks": list(checks)}
    recipe["componentRefs"] = [*recipe["componentRefs"], *refs]
    return written(tmp, "conformance.yaml", recipe)


#: scenario id -> the CLI environment it runs with
SCENARIO_ENV: dict[str, dict[str, str]] = {"nccl-roce": {"AICR_NCCL_FABRIC": "roce"}}


def written(tmp: Path, name: str, doc: dict[str, Any]) -> Path:
    path = tmp / name
    path.write_text(yamlio.dump(doc))
    return path


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_check_requests_are_granted_by_deploy_rbac_yaml(
    scenario: str,
    pytester: pytest.Pytester,
    aicr_fake_cluster_factory: Any,
    controlplane: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    profile, phase, recipe, snapshot, must_pass = SCENARIOS[scenario]
    for key, value in SCENARIO_ENV.get(scenario, {}).items():
        monkeypatch.setenv(key, value)
    fc: FakeCluster = aicr_fake_cluster_factory(profile)
    shared_clock.CURRENT[:] = [shared_clock.ClusterClock(fc), None]
    pytester.makeconftest(CONFTEST)
    out = pytester.path / "ctrf.json"
    with clock_driver(fc, step=0.25):
        pytester.runpytest(
            "-p",
            "no:cacheprovider",
            "--recipe",
            str(recipe(pytester.path)),
            "--snapshot",
            str(snapshot),
            "--aicr-kubeconfig",
            str(fc.kubeconfig_path),
            "--aicr-phase",
            phase,
            "--aicr-ctrf-report",
            str(out),
            no_reraise_ctrlc=True,
        )
    tests = {t["name"]: t for t in json.loads(out.read_text())["results"]["tests"]}
    for name in must_pass:
        assert tests[name]["status"] == "passed", (name, tests[name].get("message"))
    requests = [request_attributes(r.method, r.path, r.query, watch=r.watch) for r in fc.server.requests]
    assert requests, "the checks made no API request"
    refused = denied(controlplane, requests)
    assert not refused, f"deploy/rbac.yaml does not grant what {', '.join(must_pass)} used: {refused}"


def test_replay_reports_what_the_least_privilege_user_is_refused(controlplane: ControlPlane) -> None:
    """The replay can go red: requests deploy/rbac.yaml does not grant are named, granted ones are not."""
    requests = [
        request_attributes("GET", "/api/v1/nodes"),
        request_attributes("GET", "/api/v1/namespaces/kube-system/pods", "watch=true"),
        request_attributes("GET", "/api/v1/namespaces/kube-system/pods/p/log", "container=c"),
        request_attributes("GET", "/version"),
        request_attributes("DELETE", "/api/v1/nodes/gpu-h100-0"),
        request_attributes("PATCH", "/apis/apps/v1/namespaces/gpu-operator/daemonsets/x"),
    ]
    refused = denied(controlplane, requests)
    assert [r.split(" (")[0] for r in refused] == [
        "delete nodes",
        "patch daemonsets.apps in namespace gpu-operator",
    ]
