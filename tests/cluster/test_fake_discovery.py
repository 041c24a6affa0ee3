"""Discovery, ``/version`` and CRD-backed resources, through the real client and its dynamic client.

Discovery: https://kubernetes.io/docs/concepts/overview/kubernetes-api/#discovery-api
CRDs: https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from aicr_pytest.testing import FakeCluster, FakeClusterFactory
from aicr_pytest.testing.profiles import crd


def _get(api: Any, path: str) -> Any:
    resp = api.call_api(*api.param_serialize("GET", path, auth_settings=["BearerToken"]))
    resp.read()
    return resp.status, json.loads(resp.data)


def test_core_discovery(api: Any) -> None:
    """Discovery API: ``/api`` lists ``v1``; ``/api/v1`` is an APIResourceList with each
    resource's ``namespaced`` flag, ``kind``, ``verbs`` and subresources (``pods/status``,
    ``pods/log``)."""
    versions = client.CoreApi(api).get_api_versions()
    assert versions.versions == ["v1"]
    res = client.CoreV1Api(api).get_api_resources()
    assert res.group_version == "v1"
    by_name = {r.name: r for r in res.resources}
    assert by_name["pods"].namespaced is True and by_name["pods"].kind == "Pod"
    assert by_name["nodes"].namespaced is False
    assert {"create", "delete", "get", "list", "patch", "update", "watch"} <= set(by_name["pods"].verbs)
    assert by_name["pods/log"].verbs == ["get"]
    assert "pods/status" in by_name and "namespaces/status" in by_name


def test_group_discovery(api: Any) -> None:
    """Discovery API: ``/apis`` is an APIGroupList with preferred versions; ``/apis/<group>`` an
    APIGroup; ``/apis/<group>/<version>`` an APIResourceList."""
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    assert groups["batch"].preferred_version.group_version == "batch/v1"
    assert {"apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "resource.k8s.io"} <= set(
        groups
    )
    assert client.BatchApi(api).get_api_group().name == "batch"
    jobs = {r.name: r for r in client.BatchV1Api(api).get_api_resources().resources}
    assert jobs["jobs"].namespaced and "jobs/status" in jobs
    status, body = _get(api, "/apis/nope.example.com")
    assert status == 404 and body["reason"] == "NotFound"


def test_crd_group_appears_and_disappears(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """CRDs: creating a CustomResourceDefinition serves (and advertises) its group/version;
    deleting it removes the API and every object of it."""
    ext = client.ApiextensionsV1Api(api)
    custom = client.CustomObjectsApi(api)
    group = "trainer.kubeflow.org"
    assert group not in {g.name for g in client.ApisApi(api).get_api_versions().groups}
    created = ext.create_custom_resource_definition(crd(group, "trainjobs", "TrainJob", ["v1alpha1"]))
    established = {c.type: c.status for c in created.status.conditions}
    assert established["Established"] == "True"
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    assert groups[group].preferred_version.version == "v1alpha1"
    status, body = _get(api, f"/apis/{group}/v1alpha1")
    assert (
        status == 200
        and body["resources"][0]["name"] == "trainjobs"
        and body["resources"][0]["kind"] == "TrainJob"
    )
    tj = {"apiVersion": f"{group}/v1alpha1", "kind": "TrainJob", "metadata": {"name": "tj"}, "spec": {"x": 1}}
    custom.create_namespaced_custom_object(group, "v1alpha1", "default", "trainjobs", tj)
    listed = custom.list_namespaced_custom_object(group, "v1alpha1", "default", "trainjobs")
    assert listed["kind"] == "TrainJobList" and listed["items"][0]["metadata"]["name"] == "tj"
    ext.delete_custom_resource_definition(f"trainjobs.{group}")
    assert group not in {g.name for g in client.ApisApi(api).get_api_versions().groups}
    with pytest.raises(ApiException) as ei:
        custom.get_namespaced_custom_object(group, "v1alpha1", "default", "trainjobs", "tj")
    assert ei.value.status == 404
    # Recreating the CRD does not resurrect the objects.
    ext.create_custom_resource_definition(crd(group, "trainjobs", "TrainJob", ["v1alpha1"]))
    assert custom.list_namespaced_custom_object(group, "v1alpha1", "default", "trainjobs")["items"] == []


def test_crd_status_subresource_and_cluster_scope(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """CRDs with ``subresources.status`` separate spec and status like built-ins; ``scope:
    Cluster`` resources are served without a namespace."""
    aicr_fake_cluster.add(crd("nvidia.com", "clusterpolicies", "ClusterPolicy", namespaced=False))
    custom = client.CustomObjectsApi(api)
    body = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "status": {"state": "x"},
    }
    created = custom.create_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", body)
    assert "status" not in created
    custom.patch_cluster_custom_object_status(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy", {"status": {"state": "ready"}}
    )
    got = custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    assert got["status"] == {"state": "ready"}
    custom.patch_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy", {"status": {"state": "no"}}
    )
    assert (
        custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")["status"][
            "state"
        ]
        == "ready"
    )


def test_version_is_configurable(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    """``/version`` returns the configured ``gitVersion``/``major``/``minor`` (checks compare it
    with recipe constraints such as ``K8s.server.version >= 1.32.4``)."""
    fc = aicr_fake_cluster_factory(version={"gitVersion": "v1.31.4-eks-abc", "major": "1", "minor": "31"})
    api = fc.api_client()
    info = client.VersionApi(api).get_code()
    assert (info.git_version, info.major, info.minor) == ("v1.31.4-eks-abc", "1", "31")
    api.close()


def test_dynamic_client_discovers_core_and_crds(
    api: Any, aicr_fake_cluster: FakeCluster, tmp_path: Path
) -> None:
    """The ``kubernetes.dynamic`` client works end to end: discovery of core and CRD-backed
    resources, list bodies with ``kind``/``apiVersion``, create/get through discovered URLs."""
    aicr_fake_cluster.add(crd("trainer.kubeflow.org", "trainjobs", "TrainJob", ["v1alpha1"]))
    aicr_fake_cluster.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}})
    dyn = dynamic.DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
    nodes = dyn.resources.get(api_version="v1", kind="Node")
    assert [n.metadata.name for n in nodes.get().items] == ["n0"]
    tjs = dyn.resources.get(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob")
    assert tjs.namespaced
    tjs.create(
        body={"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t1"}},
        namespace="default",
    )
    assert tjs.get(name="t1", namespace="default").metadata.name == "t1"
    jobs = dyn.resources.get(api_version="batch/v1", kind="Job")
    assert jobs.get(namespace="default").kind == "JobList"


def test_unknown_paths_are_404(api: Any) -> None:
    """Unknown resources/groups answer 404 with a ``Status`` (what clients see for a missing API)."""
    status, body = _get(api, "/apis/example.com/v1/widgets")
    assert status == 404 and body["kind"] == "Status"
    status, body = _get(api, "/api/v1/nonsense")
    assert status == 404
