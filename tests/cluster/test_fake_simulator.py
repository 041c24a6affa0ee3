"""The GPU-cluster simulator: Job controller, scheduler, kubelet timeline, hooks. Deterministic:
time only moves through the FakeClock.

Scheduling semantics follow kube-scheduler's filters
(https://kubernetes.io/docs/concepts/scheduling-eviction/kube-scheduler/): NodeUnschedulable,
TaintToleration (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/),
NodeAffinity/nodeSelector, NodeResourcesFit incl. extended resources such as nvidia.com/gpu
(https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/). Job semantics follow
https://kubernetes.io/docs/concepts/workloads/controllers/job/.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client, watch

from aicr_pytest.testing import FakeCluster, NodeProfile, PodScript, Simulator

GPU_NODE = NodeProfile(count=1, name_prefix="gpu", gpus_per_node=8)


def _job(name: str, *, gpus: int = 0, backoff: int = 6, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "nccl:latest"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            **spec,
        },
    }


def _pod(name: str, *, gpus: int = 0, **spec: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "main", "image": "i"}
    if gpus:
        c["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [c], **spec},
    }


def _cond(obj: Any, ctype: str) -> Any:
    return next((c for c in obj.status.conditions or [] if c.type == ctype), None)


def test_job_runs_to_completion_with_log(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Job -> Pod (job-name/controller-uid labels, ownerReference) -> scheduled -> Running ->
    Succeeded with its scripted log; the Job reports Complete. A watch on the Job sees it finish
    while another thread advances the FakeClock."""
    aicr_fake_cluster.sim.add_nodes(GPU_NODE)
    aicr_fake_cluster.sim.script(
        name_prefix="nccl-", start_after=2, run_for=10, logs="# Avg bus bandwidth : 480.1\n"
    )
    batch, v1 = client.BatchV1Api(api), client.CoreV1Api(api)
    job = batch.create_namespaced_job("default", _job("nccl-test", gpus=8))
    pods = v1.list_namespaced_pod("default", label_selector="job-name=nccl-test").items
    assert len(pods) == 1
    pod = pods[0]
    assert pod.metadata.labels["batch.kubernetes.io/job-name"] == "nccl-test"
    assert pod.metadata.labels["controller-uid"] == job.metadata.uid
    assert pod.metadata.owner_references[0].uid == job.metadata.uid
    assert pod.spec.node_name == "gpu-0" and _cond(pod, "PodScheduled").status == "True"
    assert pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    aicr_fake_cluster.advance(2)
    running = v1.read_namespaced_pod(pod.metadata.name, "default")
    assert running.status.phase == "Running" and running.status.container_statuses[0].ready
    assert batch.read_namespaced_job("nccl-test", "default").status.active == 1

    def clock() -> None:
        time.sleep(0.05)
        aicr_fake_cluster.advance(30)

    t = threading.Thread(target=clock)
    t.start()
    w = watch.Watch()
    rv = batch.read_namespaced_job("nccl-test", "default").metadata.resource_version
    for ev in w.stream(
        batch.list_namespaced_job,
        "default",
        field_selector="metadata.name=nccl-test",
        resource_version=rv,
        timeout_seconds=20,
    ):
        if _cond(ev["object"], "Complete"):
            w.stop()
    t.join()
    done = batch.read_namespaced_job("nccl-test", "default")
    assert done.status.succeeded == 1 and not done.status.active
    assert _cond(done, "Complete").status == "True" and done.status.completion_time is not None
    assert v1.read_namespaced_pod(pod.metadata.name, "default").status.phase == "Succeeded"
    assert v1.read_namespaced_pod_log(pod.metadata.name, "default") == "# Avg bus bandwidth : 480.1\n"


def test_gpu_capacity_exhaustion_keeps_pod_pending(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """NodeResourcesFit counts nvidia.com/gpu already used by non-terminal pods: the second pod
    stays Pending with PodScheduled=False/Unschedulable and a FailedScheduling event, and is
    scheduled once the first one finishes."""
    aicr_fake_cluster.sim.add_nodes(GPU_NODE)
    aicr_fake_cluster.sim.script(name_prefix="big", run_for=60)
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_pod("default", _pod("big", gpus=8))
    v1.create_namespaced_pod("default", _pod("small", gpus=1))
    small = v1.read_namespaced_pod("small", "default")
    assert small.status.phase == "Pending" and not small.spec.node_name
    cond = _cond(small, "PodScheduled")
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert cond.message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    events = v1.list_namespaced_event(
        "default", field_selector="involvedObject.name=small,reason=FailedScheduling"
    ).items
    assert len(events) == 1 and events[0].type == "Warning" and events[0].message == cond.message
    aicr_fake_cluster.advance(61)
    assert v1.read_namespaced_pod("big", "default").status.phase == "Succeeded"
    assert v1.read_namespaced_pod("small", "default").spec.node_name == "gpu-0"


def test_taints_tolerations_and_node_selector(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """TaintToleration and NodeAffinity filters, with the kube-scheduler's message shape."""
    sim = aicr_fake_cluster.sim
    sim.add_nodes(
        NodeProfile(
            count=1,
            name_prefix="gpu",
            taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        )
    )
    sim.add_nodes(NodeProfile(count=1, name_prefix="cpu", gpu_product=None, gpus_per_node=0))
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_pod("default", _pod("no-tol", gpus=1))
    msg = _cond(v1.read_namespaced_pod("no-tol", "default"), "PodScheduled").message
    assert msg.startswith(
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "1 node(s) had untolerated taint {nvidia.com/gpu: present}."
    )
    tol = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    v1.create_namespaced_pod("default", _pod("tol", gpus=1, tolerations=tol))
    assert v1.read_namespaced_pod("tol", "default").spec.node_name == "gpu-0"
    v1.create_namespaced_pod(
        "default", _pod("sel", nodeSelector={"nvidia.com/gpu.product": "NVIDIA-B200"}, tolerations=tol)
    )
    msg = _cond(v1.read_namespaced_pod("sel", "default"), "PodScheduled").message
    assert "2 node(s) didn't match Pod's node affinity/selector" in msg
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}]}
                ]
            }
        }
    }
    v1.create_namespaced_pod("default", _pod("aff", affinity=affinity))
    assert v1.read_namespaced_pod("aff", "default").spec.node_name == "cpu-0"


def test_cordoned_node_is_skipped(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """NodeUnschedulable: a cordoned node (spec.unschedulable) gets no new pods."""
    aicr_fake_cluster.sim.add_nodes(NodeProfile(count=2, name_prefix="gpu"))
    aicr_fake_cluster.sim.cordon("gpu-0")
    v1 = client.CoreV1Api(api)
    node = v1.read_node("gpu-0")
    assert node.spec.unschedulable and node.spec.taints[0].key == "node.kubernetes.io/unschedulable"
    v1.create_namespaced_pod("default", _pod("p1", gpus=8))
    v1.create_namespaced_pod("default", _pod("p2", gpus=8))
    assert v1.read_namespaced_pod("p1", "default").spec.node_name == "gpu-1"
    msg = _cond(v1.read_namespaced_pod("p2", "default"), "PodScheduled").message
    assert "1 node(s) were unschedulable" in msg and "1 Insufficient nvidia.com/gpu" in msg


def test_oomkilled_pod_fails_the_job(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """A container terminated with reason OOMKilled (exit 137) makes the pod Failed; with
    backoffLimit 0 the Job fails with BackoffLimitExceeded."""
    aicr_fake_cluster.sim.add_nodes(GPU_NODE)
    aicr_fake_cluster.sim.script(
        name_prefix="oom-", run_for=5, exit_code=137, reason="OOMKilled", logs="allocating...\n"
    )
    batch, v1 = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job("default", _job("oom", gpus=1, backoff=0))
    aicr_fake_cluster.advance(10)
    pod = v1.list_namespaced_pod("default", label_selector="job-name=oom").items[0]
    term = pod.status.container_statuses[0].state.terminated
    assert pod.status.phase == "Failed" and (term.reason, term.exit_code) == ("OOMKilled", 137)
    job = batch.read_namespaced_job("oom", "default")
    failed = _cond(job, "Failed")
    assert failed.status == "True" and failed.reason == "BackoffLimitExceeded" and job.status.failed == 1


def test_job_retries_failed_pods_up_to_backoff_limit(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Failed pods are replaced until more than backoffLimit have failed."""
    aicr_fake_cluster.sim.add_nodes(GPU_NODE)
    aicr_fake_cluster.sim.script(name_prefix="flaky-", run_for=1, exit_code=1, times=1)
    batch = client.BatchV1Api(api)
    batch.create_namespaced_job("default", _job("flaky", backoff=2))
    aicr_fake_cluster.sim.clock.run_until_idle()  # type: ignore[attr-defined]
    job = batch.read_namespaced_job("flaky", "default")
    assert (job.status.failed, job.status.succeeded) == (1, 1) and _cond(job, "Complete").status == "True"


def test_indexed_job_and_active_deadline(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Indexed completion mode gives each pod a completion index; activeDeadlineSeconds fails a
    Job still running past its deadline (reason DeadlineExceeded) and kills its pods."""
    aicr_fake_cluster.sim.add_nodes(NodeProfile(count=2, name_prefix="gpu"))
    batch, v1 = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job(
        "default", _job("idx", gpus=8, completions=2, parallelism=2, completionMode="Indexed")
    )
    pods = v1.list_namespaced_pod("default", label_selector="job-name=idx").items
    indexes = sorted(p.metadata.annotations["batch.kubernetes.io/job-completion-index"] for p in pods)
    assert indexes == ["0", "1"] and {p.spec.node_name for p in pods} == {"gpu-0", "gpu-1"}
    aicr_fake_cluster.advance(5)
    done = batch.read_namespaced_job("idx", "default")
    assert done.status.completed_indexes == "0-1" and _cond(done, "Complete")
    aicr_fake_cluster.sim.script(name_prefix="slow-", run_for=None)
    batch.create_namespaced_job("default", _job("slow", activeDeadlineSeconds=30))
    aicr_fake_cluster.advance(31)
    slow = batch.read_namespaced_job("slow", "default")
    assert _cond(slow, "Failed").reason == "DeadlineExceeded"
    assert v1.list_namespaced_pod("default", label_selector="job-name=slow").items == []


def test_crashloop_and_image_pull_waiting(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Restarting containers that exit non-zero end in CrashLoopBackOff with restartCount and a
    previous log; waiting_reason keeps a pod Pending (e.g. ImagePullBackOff)."""
    aicr_fake_cluster.sim.add_nodes(GPU_NODE)
    aicr_fake_cluster.sim.script(name_prefix="crash", run_for=3, exit_code=1, logs="panic: nvml\n")
    aicr_fake_cluster.sim.script(name_prefix="pull", waiting_reason="ImagePullBackOff")
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_pod("default", _pod("crash", restartPolicy="Always"))
    v1.create_namespaced_pod("default", _pod("pull"))
    aicr_fake_cluster.advance(10)
    crash = v1.read_namespaced_pod("crash", "default")
    cs = crash.status.container_statuses[0]
    assert (
        crash.status.phase == "Running"
        and cs.state.waiting.reason == "CrashLoopBackOff"
        and cs.restart_count > 0
    )
    assert cs.last_state.terminated.exit_code == 1
    assert v1.read_namespaced_pod_log("crash", "default", previous=True) == "panic: nvml\n"
    pull = v1.read_namespaced_pod("pull", "default")
    assert (
        pull.status.phase == "Pending"
        and pull.status.container_statuses[0].state.waiting.reason == "ImagePullBackOff"
    )


def test_on_create_hook_for_custom_resources(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Controller hooks: "when a TrainJob is created, create launcher + worker pods with this log",
    and report status back on the TrainJob when the launcher finishes."""
    from aicr_pytest.testing.profiles import crd

    sim = aicr_fake_cluster.sim
    sim.add_nodes(NodeProfile(count=2, name_prefix="gpu"))
    aicr_fake_cluster.add(crd("trainer.kubeflow.org", "trainjobs", "TrainJob", ["v1alpha1"]))

    def trainjob_controller(sim: Simulator, tj: dict[str, Any]) -> None:
        ns, name = tj["metadata"]["namespace"], tj["metadata"]["name"]
        labels = {"trainer.kubeflow.org/trainjob-name": name}
        for i in range(2):
            sim.create_pod(
                ns, f"{name}-node-{i}", gpus=8, owner=tj, labels=labels, script=PodScript(run_for=None)
            )
        sim.create_pod(
            ns, f"{name}-launcher", owner=tj, labels=labels,
            script=PodScript(run_for=20, logs="#  size  count  busbw\n  8G  ...  451.2\n"),
        )  # fmt: skip

    def on_pod(sim: Simulator, pod: dict[str, Any]) -> None:
        if pod["metadata"]["name"].endswith("-launcher") and pod["status"].get("phase") == "Succeeded":
            owner = pod["metadata"]["ownerReferences"][0]["name"]
            sim.set_status(
                "trainer.kubeflow.org/v1alpha1",
                "TrainJob",
                owner,
                {"conditions": [{"type": "Complete", "status": "True"}]},
                "default",
            )

    sim.on_create("trainer.kubeflow.org", "v1alpha1", "trainjobs", trainjob_controller)
    sim.on_update("", "v1", "pods", on_pod)
    custom, v1 = client.CustomObjectsApi(api), client.CoreV1Api(api)
    tj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "nccl"},
        "spec": {},
    }
    custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", "default", "trainjobs", tj)
    pods = v1.list_namespaced_pod("default", label_selector="trainer.kubeflow.org/trainjob-name=nccl").items
    assert sorted(p.metadata.name for p in pods) == ["nccl-launcher", "nccl-node-0", "nccl-node-1"]
    aicr_fake_cluster.advance(25)
    assert "451.2" in v1.read_namespaced_pod_log("nccl-launcher", "default")
    got = custom.get_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", "default", "trainjobs", "nccl"
    )
    assert got["status"]["conditions"][0]["type"] == "Complete"
    # GC: deleting the TrainJob deletes its pods (Background propagation).
    custom.delete_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", "default", "trainjobs", "nccl")
    assert (
        v1.list_namespaced_pod("default", label_selector="trainer.kubeflow.org/trainjob-name=nccl").items
        == []
    )


def test_log_lines_stream_while_running(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Scripted log chunks appear over (fake) time; followers receive them as they come."""
    aicr_fake_cluster.sim.add_nodes(GPU_NODE)
    aicr_fake_cluster.sim.script(name_prefix="chatty", run_for=10, log_lines=[(1, "a\n"), (5, "b\n")])
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_pod("default", _pod("chatty"))
    aicr_fake_cluster.advance(1)
    assert v1.read_namespaced_pod_log("chatty", "default") == ""
    aicr_fake_cluster.advance(1)
    assert v1.read_namespaced_pod_log("chatty", "default") == "a\n"
    aicr_fake_cluster.advance(20)
    assert v1.read_namespaced_pod_log("chatty", "default") == "a\nb\n"


def test_daemonset_and_deployment_status_helpers(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Status helpers set rollout counters the way the controllers report them."""
    from aicr_pytest.testing.profiles import daemonset, deployment

    aicr_fake_cluster.sim.add_nodes(NodeProfile(count=3, name_prefix="gpu"))
    daemonset(aicr_fake_cluster, "default", "dp", "img", ["gpu-0", "gpu-1", "gpu-2"])
    deployment(aicr_fake_cluster, "default", "op", "img", "gpu-0")
    apps = client.AppsV1Api(api)
    ds = apps.read_namespaced_daemon_set("dp", "default")
    assert (ds.status.desired_number_scheduled, ds.status.number_ready) == (3, 3)
    aicr_fake_cluster.sim.set_daemonset_status("default", "dp", ready=1)
    ds = apps.read_namespaced_daemon_set("dp", "default")
    assert (ds.status.number_ready, ds.status.number_unavailable) == (1, 2)
    aicr_fake_cluster.sim.set_deployment_status("default", "op", ready=0)
    dep = apps.read_namespaced_deployment("op", "default")
    assert not dep.status.available_replicas
    assert next(c for c in dep.status.conditions if c.type == "Available").status == "False"
