"""The facade against the fake API server over real HTTP: pagination, selectors, CRUD, discovery,
error mapping. (API concepts: "Retrieving large results sets in chunks", "Label selectors",
"Field selectors"; API conventions: "HTTP Status codes".)"""

from __future__ import annotations

from typing import Any

import pytest
from _facade_helpers import assert_rbac_covers, facade

from aicr_pytest.kube import Conflict, NotFound
from aicr_pytest.testing import FakeCluster


def pods(n: int, ns: str = "bulk") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i:05d}", "namespace": ns, "labels": {"app": "a" if i % 3 else "b"}},
            "spec": {"nodeName": f"n{i % 4}", "containers": [{"name": "main", "image": "x"}]},
            "status": {"phase": "Running"},
        }
        for i in range(n)
    ]


def test_list_1200_pods_with_limit_500_makes_three_requests(fake_cluster: FakeCluster) -> None:
    fc = fake_cluster
    fc.bulk_add([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bulk"}}, *pods(1200)])
    cluster, _ = facade(fc)
    before = fc.request_count("GET", "/api/v1/namespaces/bulk/pods")
    got = list(cluster.list("v1", "Pod", "bulk", page_size=500))
    assert len(got) == 1200 and len({p["metadata"]["name"] for p in got}) == 1200
    assert fc.request_count("GET", "/api/v1/namespaces/bulk/pods") - before == 3
    assert cluster.stats.pages == 3
    assert_rbac_covers(cluster)


def test_label_and_field_selectors_pass_through(fake_cluster: FakeCluster) -> None:
    fc = fake_cluster
    fc.bulk_add([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bulk"}}, *pods(30)])
    cluster, _ = facade(fc)
    b = list(cluster.list("v1", "pods", None, label_selector="app=b", page_size=4))
    assert len(b) == 10 and all(p["metadata"]["labels"]["app"] == "b" for p in b)
    on_n1 = list(cluster.list("v1", "pods", "bulk", field_selector="spec.nodeName=n1"))
    assert {p["spec"]["nodeName"] for p in on_n1} == {"n1"} and len(on_n1) == 8
    both = list(
        cluster.list("v1", "pods", "bulk", label_selector="app in (b)", field_selector="spec.nodeName=n0")
    )
    assert len(both) == 3
    assert list(cluster.list("v1", "pods", "bulk", label_selector="app notin (a,b)")) == []


def test_crud_configmap_and_error_mapping(fake_cluster: FakeCluster) -> None:
    cluster, _ = facade(fake_cluster)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": {"k": "v"},
    }
    created = cluster.create(cm)
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
    assert cluster.read_configmap("default", "c") == {"k": "v"}
    with pytest.raises(Conflict, match="already exists"):
        cluster.create(cm)
    patched = cluster.patch("v1", "ConfigMap", "c", {"data": {"k2": "v2"}}, "default")
    assert patched["data"] == {"k": "v", "k2": "v2"}
    cluster.delete("v1", "ConfigMap", "c", "default")
    with pytest.raises(NotFound):
        cluster.get("v1", "ConfigMap", "c", "default")
    assert cluster.delete("v1", "ConfigMap", "c", "default", missing_ok=True) is None
    assert_rbac_covers(cluster)


def test_server_version_and_discovery(fake_cluster: FakeCluster) -> None:
    cluster, _ = facade(fake_cluster)
    version = cluster.server_version()
    assert version["major"] and version["gitVersion"].startswith("v")
    assert cluster.has_resource("batch", "v1", "jobs")
    assert cluster.has_resource("", "v1", "pods")
    assert not cluster.has_resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
    assert_rbac_covers(cluster)


def test_custom_resources_resolve_by_discovery_once_the_crd_exists(fake_cluster: FakeCluster) -> None:
    fc = fake_cluster
    fc.add(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True}],
            },
        }
    )
    cluster, _ = facade(fc, enforce_declared=False)  # Widgets are not in the RBAC registry
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
    }
    assert cluster.create(widget)["metadata"]["name"] == "w"
    assert [w["metadata"]["name"] for w in cluster.list("example.com/v1", "widgets", "default")] == ["w"]
    assert cluster.get("example.com/v1", "Widget", "w", "default")["kind"] == "Widget"
