"""robust-controller's readiness and leader-election posture, and its skip when the operator has
nothing to reconcile, on both backends (``k8s_backend``; helpers of :mod:`test_conformance_checks`).

The fake holds each operator's Lease and renews it on its clock; on the control plane the test
controller of :mod:`tests.harness.controlplane_leases` does, from the controller's real pod.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from _facade_helpers import fake_of

from aicr_pytest.conformance import operator_posture
from tests.cluster.test_conformance_checks import (
    CHART,
    PROFILE,
    TRAINING,
    Recipe,
    artifact,
    labels,
    leftovers,
    run,
)
from tests.cluster.test_conformance_checks import recipe as make_recipe
from tests.harness.backends import K8sBackend
from tests.harness.controlplane_leases import _renewed

CHECK = "robust-controller"
TRAINER_LEASE = "kubeflow/trainer.kubeflow.org"


def add_dynamo(doc: Recipe) -> None:
    doc["componentRefs"].append(
        {"name": "dynamo-platform", "namespace": "dynamo-system", "type": "Helm", **CHART}
    )


def robust(pytester: pytest.Pytester, backend: K8sBackend, doc: Recipe | None = None) -> dict[str, Any]:
    return run(pytester, backend, doc or make_recipe(TRAINING, CHECK)).tests[CHECK]


def test_kubeflow_posture_is_recorded(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    test = robust(pytester, k8s_backend)
    assert (test["status"], test.get("message")) == ("passed", None)
    assert artifact(test, "Controller readiness") == "Ready: 1/1 replicas"
    election = artifact(test, "Leader election")
    assert re.match(
        rf"Lease: {TRAINER_LEASE}\nHolder: kubeflow-trainer-controller-manager-[a-z0-9-]+_[0-9a-f-]+\n"
        r"Last renewed: \d+s ago\nLease duration: 15s\nTransitions: 0$",
        election,
    ), election
    assert artifact(test, "Custom resources to reconcile") == (
        "TrainJob: 0\nTrainingRuntime: 0\nClusterTrainingRuntime: 2"
    )
    assert "--- Leader election ---" in test["stdout"]


def test_dynamo_path_with_a_graph_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-inference")
    result = run(pytester, k8s_backend, make_recipe(TRAINING, CHECK, edit=add_dynamo))
    test = result.tests[CHECK]
    assert test["status"] == "passed", test.get("message")
    assert "Dynamo Operator Deployment" in labels(test)
    assert artifact(test, "Leader election").startswith(
        "Lease: dynamo-system/dynamo.nvidia.com\nHolder: dynamo-platform-dynamo-operator-controller-manager-"
    )
    assert artifact(test, "Custom resources to reconcile") == "DynamoGraphDeployment: 1"
    assert 'admission webhook "vdynamographdeployment.nvidia.com" denied the request' in artifact(
        test, "Webhook Rejection Test"
    )
    assert leftovers(k8s_backend, result.run_id) == []


def no_graphs_left(backend: K8sBackend, timeout: float = 60.0) -> bool:
    """No live DynamoGraphDeployment (an earlier test's namespace may still be going away)."""
    deadline = time.monotonic() + timeout
    while True:
        graphs = backend.list("nvidia.com/v1beta1", "DynamoGraphDeployment")
        if not [g for g in graphs if not g["metadata"].get("deletionTimestamp")]:
            return True
        if backend.virtual_time or time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def test_dynamo_without_a_graph_skips(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile("h100-eks-inference", ["dynamo-graphs-missing"])
    assert no_graphs_left(k8s_backend)
    test = robust(pytester, k8s_backend, make_recipe(TRAINING, CHECK, edit=add_dynamo))
    assert (test["status"], test["message"]) == (
        "skipped",
        "Dynamo operator is installed but has nothing to reconcile (no DynamoGraphDeployment)",
    )
    assert artifact(test, "Custom resources to reconcile") == "DynamoGraphDeployment: 0"
    assert "Webhook Rejection Test" not in labels(test)  # skipped before the invalid object is sent


def test_trainer_without_runtimes_skips(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["trainer-runtimes-missing"])
    test = robust(pytester, k8s_backend)
    assert (test["status"], test["message"]) == (
        "skipped",
        "Kubeflow Trainer operator is installed but has nothing to reconcile "
        "(no TrainJob, TrainingRuntime, ClusterTrainingRuntime)",
    )


def wait_lease_stale(backend: K8sBackend, timeout: float = 30.0) -> None:
    """On the control plane a test controller writes the stale Lease a moment after the profile is
    seeded: wait until it has, so the check never sees the last healthy renewal."""
    if backend.virtual_time:
        return
    ns, name = TRAINER_LEASE.split("/", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lease = backend.find("coordination.k8s.io/v1", "Lease", name, ns) or {}
        if _renewed(lease) and time.time() - _renewed(lease) > 300:
            return
        time.sleep(0.5)


def test_stale_leader_lease_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["operator-lease-stale"])
    wait_lease_stale(k8s_backend)
    test = robust(pytester, k8s_backend)
    assert test["status"] == "failed"
    assert re.fullmatch(
        rf"\[INTERNAL\] leader-election Lease {TRAINER_LEASE} held by "
        r"kubeflow-trainer-controller-manager-[a-z0-9-]+_[0-9a-f-]+ was last renewed (10m\d+s|1\dm\d+s) ago "
        r"\(lease duration 15s\): the Kubeflow Trainer controller is not renewing it",
        test["message"],
    ), test["message"]


def test_controller_down_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE, ["trainer-controller-down"])
    test = robust(pytester, k8s_backend)
    assert (test["status"], test["message"]) == (
        "failed",
        "[NOT_FOUND] Kubeflow Trainer controller not found: [INTERNAL] deployment "
        "kubeflow/kubeflow-trainer-controller-manager not available: 0/1 replicas",
    )


@pytest.mark.fake_only("the control plane's test controller holds the Lease while the controller runs")
def test_no_lease_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).delete("coordination.k8s.io/v1", "Lease", "trainer.kubeflow.org", "kubeflow")
    test = robust(pytester, k8s_backend)
    assert (test["status"], test["message"]) == (
        "failed",
        "[NOT_FOUND] " + operator_posture.MSG_NO_LEASE.format(ns="kubeflow", title="Kubeflow Trainer"),
    )
    assert artifact(test, "Leader election") == "(no Lease)"


@pytest.mark.fake_only("a controller with one of two replicas ready (real controllers converge)")
def test_partly_ready_controller_fails(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake = fake_of(k8s_backend)
    dep = fake.get("apps/v1", "Deployment", "kubeflow-trainer-controller-manager", "kubeflow")
    dep["spec"]["replicas"] = 2
    fake.add(dep)
    fake.sim.set_deployment_status("kubeflow", "kubeflow-trainer-controller-manager", replicas=2, ready=1)
    test = robust(pytester, k8s_backend)
    assert (test["status"], test["message"]) == (
        "failed",
        "[INTERNAL] Kubeflow Trainer controller not ready: 1/2 replicas ready",
    )


@pytest.mark.fake_only("HTTP fault injection: a 500 on the Lease list")
def test_lease_list_error_is_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    fake_of(k8s_backend).faults.server_error(path=r"/leases", times=None)
    test = robust(pytester, k8s_backend)
    assert test["status"] == "other"
    assert test["message"].startswith("[INTERNAL] failed to list leases in namespace kubeflow: "), test[
        "message"
    ]
