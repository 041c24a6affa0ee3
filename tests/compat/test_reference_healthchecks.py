# ruff: noqa: E501  (exact user-facing messages are asserted verbatim)
"""AICR's own component health-check files, read in place, run by our in-process engine."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.deployment import healthcheck as hc

pytestmark = pytest.mark.compat

# the 33 stock files
SPEC_COMPONENTS = {
    "agentgateway",
    "agentgateway-crds",
    "aws-ebs-csi-driver",
    "aws-efa",
    "cert-manager",
    "dynamo-platform",
    "gatekeeper",
    "gke-nccl-tcpxo",
    "gpu-operator",
    "gpu-operator-ocp",
    "gpu-operator-ocp-olm",
    "grove",
    "k8s-ephemeral-storage-metrics",
    "k8s-nim-operator",
    "kai-scheduler",
    "kube-prometheus-stack",
    "kubeflow-trainer",
    "kueue",
    "network-operator",
    "network-operator-ocp",
    "network-operator-ocp-olm",
    "nfd",
    "nfd-ocp",
    "nfd-ocp-olm",
    "nodewright-customizations",
    "nodewright-operator",
    "nvidia-dra-driver-gpu",
    "nvsentinel",
    "prometheus-adapter",
    "prometheus-operator-crds",
    "slinky-slurm",
    "slinky-slurm-operator",
    "slinky-slurm-operator-crds",
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


class Cluster:
    """Objects as dicts; ``fetch`` with the signature :mod:`aicr_pytest.deployment.healthcheck` expects."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = list(objects)

    def fetch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str | None,
        labels: Mapping[str, str] | None,
    ) -> list[dict[str, Any]]:
        out = []
        for o in self.objects:
            meta = o["metadata"]
            if (o["apiVersion"], o["kind"]) != (api_version, kind):
                continue
            if namespace and meta.get("namespace") != namespace:
                continue
            if name and meta["name"] != name:
                continue
            if labels and any((meta.get("labels") or {}).get(k) != v for k, v in labels.items()):
                continue
            out.append(o)
        return out


def checks_dir(reference_dir: Path) -> Path:
    return reference_dir / "aicr" / "recipes" / "checks"


def load(reference_dir: Path, component: str) -> hc.HealthCheck:
    path = checks_dir(reference_dir) / component / "health-check.yaml"
    return hc.parse_health_check(component, path.read_text(encoding="utf-8"))


def test_every_reference_file_is_accepted_by_the_allowlist(reference_dir: Path) -> None:
    files = sorted(checks_dir(reference_dir).glob("*/health-check.yaml"))
    assert {f.parent.name for f in files} == SPEC_COMPONENTS
    for f in files:
        check = hc.parse_health_check(f.parent.name, f.read_text(encoding="utf-8"))
        # every stock file is a chainsaw Test using only assert/error, with a 5m-7m budget
        assert check.shape == "chainsaw", f
        assert len(check.tests) == 1
        assert check.tests[0].timeout in (300.0, 420.0), f


def test_reference_file_with_a_write_operation_would_be_rejected(reference_dir: Path) -> None:
    text = (checks_dir(reference_dir) / "gpu-operator" / "health-check.yaml").read_text(encoding="utf-8")
    tampered = text.replace("        - assert:", "        - delete:", 1)
    with pytest.raises(hc.HealthCheckRejected) as exc:
        hc.parse_health_check("gpu-operator", tampered)
    assert str(exc.value) == (
        '[INVALID_REQUEST] component "gpu-operator" doc[0] step "validate-cluster-policy-crd-established" try[0]: '
        'operation "delete" is not in the read-only allowlist (assert, error)'
    )


def test_no_reference_check_passes_vacuously_on_an_empty_cluster(reference_dir: Path) -> None:
    for f in sorted(checks_dir(reference_dir).glob("*/health-check.yaml")):
        check = load(reference_dir, f.parent.name)
        asserts = [a for t in check.tests for s in t.steps for a in s.assertions if not a.negative]
        clock = Clock()
        result = hc.run_health_check(check, Cluster().fetch, clock=clock)
        if not asserts:  # the *-ocp-olm files have no steps at all
            assert result.passed, f
            continue
        assert not result.passed, f
        assert "[NOT_FOUND]" in str(result.error), f
        assert clock.now == hc.ABSENT_RESOURCE_GRACE, f  # absent-resource grace, not the 5m budget


# ---- a simulated gpu-operator install ----------------------------------------------------------------
NS = "gpu-operator"
CRASH = "CrashLoopBackOff"


def _pod(
    name: str, *, phase: str = "Running", waiting: str | None = None, deleting: bool = False
) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    if waiting:
        state = {"waiting": {"reason": waiting, "message": "back-off 5m0s restarting failed container"}}
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"app": name.rsplit("-", 1)[0]}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:10:00Z"
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        status["containerStatuses"] = [
            {"name": "toolkit-validation", "state": {"running": {}}, "ready": True},
            {"name": "main", "state": state, "ready": waiting is None, "restartCount": 7 if waiting else 0},
        ]
        status["initContainerStatuses"] = [{"name": "init", "state": {"terminated": {"exitCode": 0}}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": "gpu-node-1"},
        "status": status,
    }


def _ds(name: str, desired: int = 2, ready: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS},
        "status": {"desiredNumberScheduled": desired, "numberReady": ready, "numberAvailable": ready},
    }


def gpu_operator_cluster(*, policy_state: str = "ready", device_plugin_waiting: str | None = None) -> Cluster:
    return Cluster(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusterpolicies.nvidia.com"},
            "status": {
                "conditions": [
                    {"type": "NamesAccepted", "status": "True"},
                    {"type": "Established", "status": "True"},
                ]
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "gpu-operator", "namespace": NS},
            "spec": {"replicas": 1},
            "status": {"replicas": 1, "availableReplicas": 1, "readyReplicas": 1},
        },
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "status": {"state": policy_state},
        },
        _ds("nvidia-driver-daemonset"),
        _ds("nvidia-container-toolkit-daemonset"),
        _ds("nvidia-device-plugin-daemonset", ready=1 if device_plugin_waiting else 2),
        _ds("nvidia-dcgm-exporter"),
        _pod("gpu-operator-7d9f8"),
        _pod("nvidia-driver-daemonset-abcde"),
        _pod("nvidia-container-toolkit-daemonset-fghij"),
        _pod("nvidia-device-plugin-daemonset-klmno", waiting=device_plugin_waiting),
        _pod("nvidia-dcgm-exporter-pqrst"),
        _pod("nvidia-cuda-validator-uvwxy", phase="Succeeded"),
    )


def run(reference_dir: Path, component: str, cluster: Cluster) -> tuple[hc.HealthCheckResult, float]:
    clock = Clock()
    result = hc.run_health_check(load(reference_dir, component), cluster.fetch, clock=clock)
    return result, clock.now


def test_gpu_operator_check_passes_on_a_healthy_install(reference_dir: Path) -> None:
    result, elapsed = run(reference_dir, "gpu-operator", gpu_operator_cluster())
    assert result.passed, result.error
    assert elapsed == 0
    assert result.line == "[chainsaw] gpu-operator: health check passed"


def test_gpu_operator_check_fails_on_a_crash_looping_device_plugin(reference_dir: Path) -> None:
    # realistic: the ClusterPolicy does not reach ready while the device plugin crash-loops
    result, elapsed = run(
        reference_dir,
        "gpu-operator",
        gpu_operator_cluster(policy_state="notReady", device_plugin_waiting=CRASH),
    )
    assert not result.passed
    assert result.step == "validate-cluster-policy-ready"
    assert result.error == (
        'step "validate-cluster-policy-ready": [INTERNAL] ClusterPolicy cluster-policy does not match: '
        'status.state: expected "ready", got "notReady"'
    )
    assert elapsed == 300  # the file's 5m budget: the object exists, so no absent-resource grace


def test_gpu_operator_pod_step_names_the_crash_looping_pod(reference_dir: Path) -> None:
    result, elapsed = run(reference_dir, "gpu-operator", gpu_operator_cluster(device_plugin_waiting=CRASH))
    assert not result.passed
    assert result.step == "validate-all-pods-healthy"
    assert result.error == (
        'step "validate-all-pods-healthy": [INTERNAL] Pod gpu-operator/nvidia-device-plugin-daemonset-klmno '
        "matches forbidden shape (phase=Running, waiting=main:CrashLoopBackOff, node=gpu-node-1)"
    )
    assert elapsed == 300


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError"])
def test_gpu_operator_other_stuck_container_reasons(reference_dir: Path, reason: str) -> None:
    result, _ = run(reference_dir, "gpu-operator", gpu_operator_cluster(device_plugin_waiting=reason))
    assert not result.passed and f"waiting=main:{reason}" in str(result.error)


def test_gpu_operator_ignores_terminating_ghost_pods(reference_dir: Path) -> None:
    cluster = gpu_operator_cluster()
    cluster.objects.append(_pod("nvidia-device-plugin-daemonset-old00", phase="Pending", deleting=True))
    lost = _pod("nvidia-driver-daemonset-lost0", phase="Unknown")
    lost["status"]["reason"] = "NodeLost"
    cluster.objects.append(lost)
    result, _ = run(reference_dir, "gpu-operator", cluster)
    assert result.passed, result.error


def test_gpu_operator_recovering_within_budget_passes(reference_dir: Path) -> None:
    cluster = gpu_operator_cluster(device_plugin_waiting=CRASH)

    class RecoveringClock(Clock):
        def sleep(self, s: float) -> None:
            super().sleep(s)
            if self.now >= 60:
                cluster.objects = gpu_operator_cluster().objects

    clock = RecoveringClock()
    result = hc.run_health_check(load(reference_dir, "gpu-operator"), cluster.fetch, clock=clock)
    assert result.passed
    assert clock.now == 60


def test_dra_driver_check(reference_dir: Path) -> None:
    ns = "nvidia-dra-driver"

    def cluster(ready: int) -> Cluster:
        ds = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "nvidia-dra-driver-gpu-kubelet-plugin", "namespace": ns},
            "status": {"desiredNumberScheduled": 2, "numberReady": ready},
        }
        p = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "nvidia-dra-driver-gpu-kubelet-plugin-x", "namespace": ns},
            "status": {
                "phase": "Running",
                "containerStatuses": [{"name": "plugin", "state": {"running": {}}}],
            },
        }
        return Cluster(ds, p)

    assert run(reference_dir, "nvidia-dra-driver-gpu", cluster(2))[0].passed
    result, _ = run(reference_dir, "nvidia-dra-driver-gpu", cluster(1))
    assert result.error == (
        'step "validate-kubelet-plugin-daemonset-fully-rolled-out": [INTERNAL] DaemonSet '
        "nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin does not match: "
        "status.(numberReady == desiredNumberScheduled): expected true, got false"
    )


# ---- resolution through a real data root -------------------------------------------------------------
def test_registry_assert_files_resolve_through_the_reference_data_root(reference_dir: Path) -> None:
    from aicr_pytest.core import yamlio

    root = reference_dir / "aicr" / "recipes"

    def read(rel: str) -> str:
        return (root / rel).read_text(encoding="utf-8")

    registry = yamlio.load(read("registry.yaml"))
    registered = [c for c in registry["components"] if (c.get("healthCheck") or {}).get("assertFile")]
    assert registered
    lookup = hc.registry_lookup(read)
    for comp in registered:
        source = hc.resolve_health_check_source({"name": comp["name"]}, read, lookup)
        assert source is not None and source[1] == comp["healthCheck"]["assertFile"]
        assert hc.parse_health_check(comp["name"], source[0]).shape == "chainsaw"


@pytest.mark.parametrize(
    ("manifest", "names"),
    [
        ("tuning.yaml", ["tuning"]),
        ("tuning-gke.yaml", ["tuning"]),
        ("bcm-setup.yaml", ["setup"]),
        ("no-op.yaml", ["no-op"]),
    ],
)
def test_skyhook_names_from_reference_manifests(reference_dir: Path, manifest: str, names: list[str]) -> None:
    from aicr_pytest.deployment import extract_skyhook_names

    path = (
        reference_dir
        / "aicr"
        / "recipes"
        / "components"
        / "nodewright-customizations"
        / "manifests"
        / manifest
    )
    assert extract_skyhook_names(path.read_text(encoding="utf-8")) == names
