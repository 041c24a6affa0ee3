"""Cluster profiles and named faults: the objects they produce look like a real cluster in that
state (read back through the real client)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aicr_pytest.testing import FAULTS, PROFILES, FakeCluster, FakeClusterFactory


@pytest.fixture
def training(aicr_fake_cluster_factory: FakeClusterFactory) -> FakeCluster:
    return aicr_fake_cluster_factory("h100-eks-training")


def _client(fc: FakeCluster) -> Any:
    return fc.api_client()


def test_training_profile_nodes(training: FakeCluster) -> None:
    """4x p5.48xlarge-like nodes with 8 H100 80GB HBM3 each (GFD labels, allocatable GPUs, EFA)
    plus one system node; all Ready."""
    v1 = client.CoreV1Api(_client(training))
    nodes = v1.list_node().items
    assert len(nodes) == 5
    gpu = v1.list_node(label_selector="nvidia.com/gpu.present=true").items
    assert [n.metadata.name for n in gpu] == ["h100-0", "h100-1", "h100-2", "h100-3"]
    for n in gpu:
        labels = n.metadata.labels
        assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert labels["nvidia.com/gpu.count"] == "8"
        assert labels["node.kubernetes.io/instance-type"] == "p5.48xlarge"
        assert n.status.allocatable["nvidia.com/gpu"] == "8"
        assert n.status.allocatable["vpc.amazonaws.com/efa"] == "32"
        assert next(c for c in n.status.conditions if c.type == "Ready").status == "True"
        assert n.status.node_info.os_image.startswith("Ubuntu 24.04")
    assert client.VersionApi(_client(training)).get_code().minor == "34"


def test_training_profile_gpu_operator_healthy(training: FakeCluster) -> None:
    """GPU Operator: Deployment available with a version label, ClusterPolicy ``cluster-policy``
    state ready (CRD Established), operand DaemonSets fully ready, all pods Running."""
    api = _client(training)
    apps, v1 = client.AppsV1Api(api), client.CoreV1Api(api)
    dep = apps.read_namespaced_deployment("gpu-operator", "gpu-operator")
    assert dep.status.available_replicas == 1 and dep.metadata.labels["app.kubernetes.io/version"]
    crd = client.ApiextensionsV1Api(api).read_custom_resource_definition("clusterpolicies.nvidia.com")
    assert next(c for c in crd.status.conditions if c.type == "Established").status == "True"
    cp = client.CustomObjectsApi(api).get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy"
    )
    assert cp["status"]["state"] == "ready"
    ds = {d.metadata.name: d for d in apps.list_namespaced_daemon_set("gpu-operator").items}
    for name in (
        "nvidia-device-plugin-daemonset",
        "nvidia-driver-daemonset",
        "gpu-feature-discovery",
        "nvidia-dcgm-exporter",
    ):
        assert ds[name].status.number_ready == ds[name].status.desired_number_scheduled == 4
    pods = v1.list_namespaced_pod("gpu-operator").items
    assert pods and all(p.status.phase == "Running" for p in pods)
    assert v1.list_namespaced_pod("gpu-operator", label_selector="app=nvidia-device-plugin-daemonset").items


def test_training_profile_stack_components(training: FakeCluster) -> None:
    """DRA driver, KAI, Kubeflow Trainer, Prometheus stack are installed where the AICR registry
    puts them."""
    api = _client(training)
    apps, v1 = client.AppsV1Api(api), client.CoreV1Api(api)
    namespaces = {n.metadata.name for n in v1.list_namespace().items}
    assert {
        "gpu-operator",
        "nvidia-dra-driver",
        "kai-scheduler",
        "kubeflow",
        "monitoring",
        "cert-manager",
    } <= namespaces
    assert apps.read_namespaced_deployment("kai-operator", "kai-scheduler").status.available_replicas == 1
    assert (
        apps.read_namespaced_daemon_set(
            "nvidia-dra-driver-gpu-kubelet-plugin", "nvidia-dra-driver"
        ).status.number_ready
        == 4
    )
    slices = client.CustomObjectsApi(api).list_cluster_custom_object(
        "resource.k8s.io", "v1", "resourceslices"
    )
    assert len(slices["items"]) == 4 and len(slices["items"][0]["spec"]["devices"]) == 8
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"trainer.kubeflow.org", "monitoring.coreos.com", "scheduling.run.ai", "nvidia.com"} <= groups
    assert (
        apps.read_namespaced_deployment(
            "kubeflow-trainer-controller-manager", "kubeflow"
        ).status.available_replicas
        == 1
    )
    runtimes = client.CustomObjectsApi(api).list_cluster_custom_object(
        "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"
    )
    assert {r["metadata"]["name"] for r in runtimes["items"]} >= {"torch-distributed"}
    cm = v1.read_namespaced_config_map("aicr-simulator", "kube-public")
    assert cm.data["simulated"] == "true" and cm.data["profile"] == "h100-eks-training"


def test_training_profile_runs_gpu_jobs(training: FakeCluster) -> None:
    """The healthy profile schedules a 4-node x 8-GPU workload (KAI scheduler name included)."""
    v1 = client.CoreV1Api(_client(training))
    for i in range(4):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"w{i}"},
            "spec": {
                "schedulerName": "kai-scheduler",
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            },
        }
        v1.create_namespaced_pod("default", pod)
    nodes = {v1.read_namespaced_pod(f"w{i}", "default").spec.node_name for i in range(4)}
    assert nodes == {"h100-0", "h100-1", "h100-2", "h100-3"}


def test_inference_profile_adds_dynamo(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-inference")
    api = _client(fc)
    crd = client.ApiextensionsV1Api(api).read_custom_resource_definition("dynamographdeployments.nvidia.com")
    assert crd.spec.names.kind == "DynamoGraphDeployment"
    assert client.AppsV1Api(api).list_namespaced_deployment("dynamo-system").items


def test_fault_device_plugin_crashloop(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    """One device-plugin pod in CrashLoopBackOff with restarts; DaemonSet not fully ready;
    ClusterPolicy notReady."""
    fc = aicr_fake_cluster_factory("h100-eks-training", ["device-plugin-crashloop"])
    api = _client(fc)
    ds = client.AppsV1Api(api).read_namespaced_daemon_set("nvidia-device-plugin-daemonset", "gpu-operator")
    assert ds.status.number_ready == 3 < ds.status.desired_number_scheduled == 4
    pods = (
        client.CoreV1Api(api)
        .list_namespaced_pod("gpu-operator", label_selector="app=nvidia-device-plugin-daemonset")
        .items
    )
    bad = [p for p in pods if p.status.container_statuses[0].state.waiting]
    assert len(bad) == 1
    cs = bad[0].status.container_statuses[0]
    assert cs.state.waiting.reason == "CrashLoopBackOff" and cs.restart_count > 0 and not cs.ready
    assert cs.last_state.terminated.exit_code == 1
    cp = client.CustomObjectsApi(api).get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy"
    )
    assert cp["status"]["state"] == "notReady"
    assert fc.state["faults"] == ["device-plugin-crashloop"]


def test_fault_gpu_operator_missing(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    """No gpu-operator namespace, CRD or objects; nodes lack GFD labels and nvidia.com/gpu."""
    fc = aicr_fake_cluster_factory("h100-eks-training", ["gpu-operator-missing"])
    api = _client(fc)
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as ei:
        v1.read_namespace("gpu-operator")
    assert ei.value.status == 404
    with pytest.raises(ApiException):
        client.ApiextensionsV1Api(api).read_custom_resource_definition("clusterpolicies.nvidia.com")
    assert v1.list_node(label_selector="nvidia.com/gpu.present").items == []
    assert all("nvidia.com/gpu" not in n.status.allocatable for n in v1.list_node().items)
    assert [n.metadata.labels["node.kubernetes.io/instance-type"] for n in v1.list_node().items].count(
        "p5.48xlarge"
    ) == 4


def test_fault_no_kai(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    """No KAI: no namespace; a pod asking for kai-scheduler stays Pending with no condition."""
    fc = aicr_fake_cluster_factory("h100-eks-training", ["no-kai"])
    v1 = client.CoreV1Api(_client(fc))
    assert "kai-scheduler" not in {n.metadata.name for n in v1.list_namespace().items}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "k"},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "image": "i"}]},
    }
    v1.create_namespaced_pod("default", pod)
    fc.advance(60)
    got = v1.read_namespaced_pod("k", "default")
    assert got.status.phase == "Pending" and not got.spec.node_name and not got.status.conditions


def test_fault_gpu_node_cordoned(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    fc = aicr_fake_cluster_factory("h100-eks-training", ["gpu-node-cordoned"])
    node = client.CoreV1Api(_client(fc)).read_node("h100-0")
    assert node.spec.unschedulable is True
    assert any(
        t.key == "node.kubernetes.io/unschedulable" and t.effect == "NoSchedule" for t in node.spec.taints
    )


def test_nccl_faults_are_recorded(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    """The NCCL faults are stubs for now: recorded in the cluster state and the kubeconfig."""
    fc = aicr_fake_cluster_factory("h100-eks-training", ["nccl-low-bandwidth", "nccl-socket-fallback"])
    assert fc.state["faults"] == ["nccl-low-bandwidth", "nccl-socket-fallback"]
    ext = fc.kubeconfig()["clusters"][0]["cluster"]["extensions"][0]
    assert ext["name"] == "aicr.run/simulated" and ext["extension"]["faults"] == fc.state["faults"]


def test_profile_catalogue_and_errors() -> None:
    assert {"h100-eks-training", "h100-eks-inference"} <= set(PROFILES)
    assert set(FAULTS) >= {  # check players add their own faults
        "dynamo-crd-missing",
        "inference-low-throughput",
        "inference-endpoint-down",
        "device-plugin-crashloop",
        "gpu-operator-missing",
        "no-kai",
        "nccl-low-bandwidth",
        "nccl-socket-fallback",
        "gpu-node-cordoned",
    }
    with pytest.raises(ValueError, match="unknown profile"):
        FakeCluster("nope")
    with pytest.raises(ValueError, match="unknown fault"):
        FakeCluster("h100-eks-training", ["nope"])


def test_profile_builds_without_starting_a_server() -> None:
    """A whole profile (hundreds of objects) builds in-process (its speed is a benchmark's job)."""
    fc = FakeCluster("h100-eks-inference")
    assert fc.store.resource_version > 100


@pytest.mark.parametrize("aicr_fake_cluster", ["h100-eks-training"], indirect=True)
def test_fake_cluster_fixture_indirect_profile(aicr_fake_cluster: FakeCluster) -> None:
    """``aicr_fake_cluster`` takes a profile name through indirect parametrization."""
    assert aicr_fake_cluster.profile is not None and aicr_fake_cluster.profile.name == "h100-eks-training"
    assert aicr_fake_cluster.kubeconfig_path.is_file()
