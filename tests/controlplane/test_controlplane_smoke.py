"""Smoke tests of the real control plane: etcd + kube-apiserver + controller-manager + scheduler + kwok.

Skipped (with the reason) when the binaries are not built; ``AICR_REQUIRE_CONTROLPLANE=1`` fails instead.
Build them with ``scripts/controlplane.sh build``.
"""

from __future__ import annotations

import time
import urllib.error
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client

from tests.controlplane.waiting import wait_for
from tests.harness.controlplane import (
    GB200_NODES,
    H100_NODES,
    K8S_VERSION,
    SYSTEM_NODES,
    ControlPlane,
    ControlPlaneUnavailable,
    find_binaries,
    pid_exists,
    start_controlplane,
)
from tests.harness.controlplane_fixtures import skip_or_fail

T = TypeVar("T")
GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"


@pytest.fixture(scope="module")
def api(controlplane: ControlPlane) -> Any:
    return controlplane.api_client()


@pytest.fixture
def namespace(api: Any) -> Iterator[str]:
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    core: Any = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    # The controller-manager's ServiceAccount controller must create "default" before pods are admitted.
    wait_for("default ServiceAccount", lambda: _sa_exists(core, name), timeout=30)
    yield name
    core.delete_namespace(name)


def _sa_exists(core: Any, namespace: str) -> bool:
    try:
        core.read_namespaced_service_account("default", namespace)
    except client.ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def gpu_job(name: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"nvidia.com/gpu.product": GPU_PRODUCT},
                    "containers": [
                        {
                            "name": "main",
                            "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04",
                            "command": ["nvidia-smi"],
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        }
                    ],
                }
            },
        },
    }


def job_pods(core: Any, namespace: str, job: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items)


def test_version_is_pinned(controlplane: ControlPlane) -> None:
    version = controlplane.get("/version")
    assert version["gitVersion"] == K8S_VERSION
    assert version["major"] == "1"
    assert version["minor"] == K8S_VERSION.split(".")[1]


def test_kwok_gpu_nodes(api: Any) -> None:
    core: Any = client.CoreV1Api(api)
    gpu = core.list_node(label_selector=f"nvidia.com/gpu.product={GPU_PRODUCT}").items
    assert sorted(n.metadata.name for n in gpu) == H100_NODES.node_names()
    for node in gpu:
        assert node.status.allocatable["nvidia.com/gpu"] == "8"
        assert node.metadata.labels["nvidia.com/gpu.count"] == "8"
        assert [t.key for t in node.spec.taints or []] == ["nvidia.com/gpu"]
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
    system = core.list_node(label_selector="aicr.test/pool=system").items
    assert [n.metadata.name for n in system] == SYSTEM_NODES.node_names()


def test_kwok_gb200_nodes(api: Any) -> None:
    core: Any = client.CoreV1Api(api)
    gpu = core.list_node(label_selector="nvidia.com/gpu.product=NVIDIA-GB200").items
    assert sorted(n.metadata.name for n in gpu) == GB200_NODES.node_names()
    for node in gpu:
        assert node.status.allocatable["nvidia.com/gpu"] == "4"
        assert node.status.allocatable["vpc.amazonaws.com/efa"] == "8"
        assert node.metadata.labels["kubernetes.io/arch"] == "arm64"
        assert node.status.node_info.architecture == "arm64"
        assert node.metadata.labels["nvidia.com/gpu.clique"]
        # not "gpu": the H100 profiles' GPU DaemonSets select aicr.test/pool=gpu
        assert node.metadata.labels["aicr.test/pool"] == "gpu-gb200"
        assert [t.key for t in node.spec.taints or []] == ["nvidia.com/gpu"]
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


def test_gpu_job_is_scheduled_and_run_by_kwok(api: Any, namespace: str) -> None:
    core: Any = client.CoreV1Api(api)
    batch: Any = client.BatchV1Api(api)
    batch.create_namespaced_job(namespace, gpu_job("gpu-ok", 1))
    pod = wait_for("a pod of job gpu-ok", lambda: (job_pods(core, namespace, "gpu-ok") or [None])[0])
    # The Job controller made the pod; ExtendedResourceToleration added the nvidia.com/gpu toleration.
    assert any(t.key == "nvidia.com/gpu" for t in pod.spec.tolerations)
    name = pod.metadata.name

    def running_or_done() -> Any:
        p = core.read_namespaced_pod(name, namespace)
        return p if p.status.phase in ("Running", "Succeeded") else None

    pod = wait_for("pod Running/Succeeded", running_or_done)
    assert pod.spec.node_name in H100_NODES.node_names()
    # kwok's default stages complete pods owned by a Job, so the real Job controller marks it Complete.
    job = wait_for(
        "job gpu-ok complete",
        lambda: (j := batch.read_namespaced_job_status("gpu-ok", namespace)).status.succeeded and j,
    )
    assert job.status.succeeded == 1


def test_oversized_gpu_job_stays_pending(api: Any, namespace: str) -> None:
    core: Any = client.CoreV1Api(api)
    batch: Any = client.BatchV1Api(api)
    batch.create_namespaced_job(namespace, gpu_job("gpu-too-big", 16))
    pod = wait_for("a pod of gpu-too-big", lambda: (job_pods(core, namespace, "gpu-too-big") or [None])[0])

    def failed_scheduling() -> Any:
        events = core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={pod.metadata.name},reason=FailedScheduling"
        ).items
        return events[0] if events else None

    event = wait_for("FailedScheduling event", failed_scheduling)
    assert "Insufficient nvidia.com/gpu" in event.message
    pod = core.read_namespaced_pod(pod.metadata.name, namespace)
    assert pod.status.phase == "Pending"
    assert not pod.spec.node_name


def test_least_privilege_user_is_not_admin(controlplane: ControlPlane) -> None:
    with pytest.raises(urllib.error.HTTPError) as denied:
        controlplane.get("/api/v1/secrets", admin=False)
    assert denied.value.code == 403
    assert controlplane.get("/api/v1/secrets")["kind"] == "SecretList"


def test_least_privilege_user_has_what_rbac_yaml_grants(controlplane: ControlPlane) -> None:
    if controlplane.rbac_manifest is None:
        pytest.skip("deploy/rbac.yaml not present: the least-privilege user has no bindings")
    core: Any = client.CoreV1Api(controlplane.api_client(admin=False))
    names = sorted(n.metadata.name for n in core.list_node().items)
    assert names == sorted(H100_NODES.node_names() + GB200_NODES.node_names() + SYSTEM_NODES.node_names())


def test_start_and_teardown_leave_no_processes(
    record_property: Callable[[str, object], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """A second, private control plane: measures the warm start and checks teardown kills everything."""
    try:
        binaries = find_binaries()
    except ControlPlaneUnavailable as e:
        skip_or_fail(str(e))
        return
    started = time.monotonic()
    cp = start_controlplane(binaries)
    ready = time.monotonic() - started
    pids = cp.pids
    workdir: Path = cp.workdir
    assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
    assert all(pid_exists(pid) for pid in pids.values())
    stop_started = time.monotonic()
    cp.stop()
    stopped = time.monotonic() - stop_started
    left = {name: pid for name, pid in pids.items() if pid_exists(pid)}
    assert not left, f"processes left after teardown: {left}"
    assert not workdir.exists()
    record_property("controlplane_warm_start_s", round(ready, 2))
    record_property("controlplane_stop_s", round(stopped, 2))
    with capsys.disabled():
        print(f"\ncontrol plane warm start {ready:.1f}s, teardown {stopped:.1f}s")
