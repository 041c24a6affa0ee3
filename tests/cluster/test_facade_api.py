"""The facade over real HTTP: pagination, selectors, CRUD, discovery, error mapping -- on the fake API
server and on a real control plane (``k8s_backend``), as the least-privilege user where the backend
has one. (API concepts: "Retrieving large results sets in chunks", "Label selectors", "Field
selectors"; API conventions: "HTTP Status codes".)"""

from __future__ import annotations

from typing import Any

import pytest
from _facade_helpers import assert_rbac_covers, backend_facade

from aicr_pytest.kube import AccessDenied, Conflict, NotFound
from aicr_pytest.kube.wait import wait_deleted
from tests.harness.backends import K8sBackend


def node_name(ns: str, i: int) -> str:
    return f"{ns}-n{i % 4}"


def pods(n: int, ns: str) -> list[dict[str, Any]]:
    # Bound to nodes no kubelet or kwok runs (:func:`seed_pods` creates them): on the control plane
    # nothing runs these pods, and the pod GC, which removes pods bound to *missing* nodes 40 s
    # after it sees them, leaves them alone however slow the machine is.
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i:05d}", "namespace": ns, "labels": {"app": "a" if i % 3 else "b"}},
            "spec": {"nodeName": node_name(ns, i), "containers": [{"name": "main", "image": "x"}]},
        }
        for i in range(n)
    ]


def seed_pods(backend: K8sBackend, n: int) -> str:
    ns = backend.namespace("bulk")
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node_name(ns, i)}} for i in range(4)]
    backend.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, *nodes, *pods(n, ns)])
    return ns


def test_list_1200_pods_with_limit_500_makes_three_requests(k8s_backend: K8sBackend) -> None:
    ns = seed_pods(k8s_backend, 1200)
    cluster, _ = backend_facade(k8s_backend)
    path = f"/api/v1/namespaces/{ns}/pods"
    before = k8s_backend.request_count("GET", path)
    got = list(cluster.list("v1", "Pod", ns, page_size=500))
    assert len(got) == 1200 and len({p["metadata"]["name"] for p in got}) == 1200
    if before is not None:  # the fake counts what it served
        assert (k8s_backend.request_count("GET", path) or 0) - before == 3
    assert cluster.stats.pages == 3
    assert_rbac_covers(cluster)


def test_label_and_field_selectors_pass_through(k8s_backend: K8sBackend) -> None:
    ns = seed_pods(k8s_backend, 30)
    cluster, _ = backend_facade(k8s_backend)
    b = [
        p
        for p in cluster.list("v1", "pods", None, label_selector="app=b", page_size=4)
        if p["metadata"]["namespace"] == ns  # a shared control plane may run other app=b pods
    ]
    assert len(b) == 10 and all(p["metadata"]["labels"]["app"] == "b" for p in b)
    on_n1 = list(cluster.list("v1", "pods", ns, field_selector=f"spec.nodeName={node_name(ns, 1)}"))
    assert {p["spec"]["nodeName"] for p in on_n1} == {node_name(ns, 1)} and len(on_n1) == 8
    on_n0 = f"spec.nodeName={node_name(ns, 0)}"
    both = list(cluster.list("v1", "pods", ns, label_selector="app in (b)", field_selector=on_n0))
    assert len(both) == 3
    assert list(cluster.list("v1", "pods", ns, label_selector="app notin (a,b)")) == []


def test_crud_configmap_and_error_mapping(k8s_backend: K8sBackend) -> None:
    ns = k8s_backend.namespace("default")
    cluster, _ = backend_facade(k8s_backend)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": ns},
        "data": {"k": "v"},
    }
    created = cluster.create(cm)
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
    assert cluster.read_configmap(ns, "c") == {"k": "v"}
    with pytest.raises(Conflict, match="already exists"):
        cluster.create(cm)
    patched = cluster.patch("v1", "ConfigMap", "c", {"data": {"k2": "v2"}}, ns)
    assert patched["data"] == {"k": "v", "k2": "v2"}
    deleted = cluster.delete("v1", "ConfigMap", "c", ns)
    if k8s_backend.has_real_controllers:
        # Foreground deletion: the apiserver always adds the foregroundDeletion finalizer and the
        # garbage collector removes the object a moment later (known drift: the fake deletes an
        # object without dependents at once).
        assert deleted is not None and deleted["metadata"].get("deletionTimestamp")
        assert "foregroundDeletion" in deleted["metadata"].get("finalizers", [])
    wait_deleted(cluster, "v1", "ConfigMap", "c", ns, timeout=30, clock=k8s_backend.clock)
    with pytest.raises(NotFound):
        cluster.get("v1", "ConfigMap", "c", ns)
    assert cluster.delete("v1", "ConfigMap", "c", ns, missing_ok=True) is None
    assert_rbac_covers(cluster)


def test_server_version_and_discovery(k8s_backend: K8sBackend) -> None:
    cluster, _ = backend_facade(k8s_backend)
    version = cluster.server_version()
    assert version["major"] and version["gitVersion"].startswith("v")
    assert cluster.has_resource("batch", "v1", "jobs")
    assert cluster.has_resource("", "v1", "pods")
    assert not cluster.has_resource("aicr.test", "v1", "neverinstalleds")
    if k8s_backend.name == "fake":  # an empty fake; the shared control plane may hold a seeded profile
        assert not cluster.has_resource("trainer.kubeflow.org", "v1alpha1", "trainjobs")
    assert_rbac_covers(cluster)


def test_custom_resources_resolve_by_discovery_once_the_crd_exists(k8s_backend: K8sBackend) -> None:
    group = "example.com" if k8s_backend.name == "fake" else f"e{k8s_backend.run_id}.example.com"
    k8s_backend.seed(
        [
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"widgets.{group}"},
                "spec": {
                    "group": group,
                    "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {
                                "openAPIV3Schema": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                }
                            },
                        }
                    ],
                },
            }
        ]
    )
    ns = k8s_backend.namespace("default")
    # Widgets are not in the RBAC registry (nor granted by deploy/rbac.yaml): the admin creates them.
    cluster, _ = backend_facade(k8s_backend, admin=True, enforce_declared=False)
    widget = {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": ns},
    }
    assert cluster.create(widget)["metadata"]["name"] == "w"
    assert [w["metadata"]["name"] for w in cluster.list(f"{group}/v1", "widgets", ns)] == ["w"]
    assert cluster.get(f"{group}/v1", "Widget", "w", ns)["kind"] == "Widget"


def test_unlisted_permission_is_access_denied_by_the_least_privilege_user(k8s_backend: K8sBackend) -> None:
    """A 403 names verb, resource and namespace and is not retried. The fake has no authorizer, so it
    scripts the 403; the control plane's RBAC refuses Secrets to the user bound to deploy/rbac.yaml."""
    ns = k8s_backend.namespace("bulk")
    if k8s_backend.can_inject_faults:
        from tests.harness.backends import FakeBackend

        assert isinstance(k8s_backend, FakeBackend)
        k8s_backend.fake.faults.deny("GET", f"/api/v1/namespaces/{ns}/secrets")
    cluster, sleep = backend_facade(k8s_backend, enforce_declared=False)
    with pytest.raises(AccessDenied) as err:
        list(cluster.list("v1", "secrets", ns))
    assert str(err.value) == f"RBAC denied: cannot list secrets in namespace {ns} (403 Forbidden)"
    assert cluster.retry_count == 0 and sleep.calls == []
