"""Kubernetes REST semantics of the fake API server, driven through the real ``kubernetes`` client.

Each test cites the convention it reproduces:
API conventions = https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md
API concepts    = https://kubernetes.io/docs/reference/using-api/api-concepts/
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aicr_pytest.testing import FakeCluster


def _cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {}}


def _pod(
    name: str, labels: dict[str, str] | None = None, node: str | None = None, **meta: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}], "restartPolicy": "Never"}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, **meta},
        "spec": spec,
    }


def _status(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


# --- create / get ------------------------------------------------------------------------------


def test_create_returns_201_and_the_object(api: Any) -> None:
    """API conventions "HTTP Status codes": 201 StatusCreated for a POST that creates a resource;
    the client's generated response map only deserializes a 201 (a 200 would give ``None``)."""
    v1 = client.CoreV1Api(api)
    data, code, _ = v1.create_namespaced_config_map_with_http_info("default", _cm("a", {"k": "v"}))
    assert code == 201
    assert data.metadata.name == "a"
    assert data.kind == "ConfigMap" and data.api_version == "v1"
    custom = client.CustomObjectsApi(api)
    # Custom objects create also answers 201 (kmock's 200 made this None).
    client.ApiextensionsV1Api(api).create_custom_resource_definition(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                    }
                ],
            },
        }
    )
    obj = custom.create_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
    )
    assert obj is not None and obj["metadata"]["name"] == "w"


def test_create_duplicate_is_409_already_exists(api: Any) -> None:
    """API conventions "HTTP Status codes" (409 Conflict) and "Response Status Kind": the body is a
    ``Status`` with ``reason: AlreadyExists`` and ``details.name/kind``."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("default", _cm("dup"))
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("default", _cm("dup"))
    assert ei.value.status == 409
    st = _status(ei.value)
    assert st["kind"] == "Status" and st["status"] == "Failure"
    assert st["reason"] == "AlreadyExists" and st["code"] == 409
    assert st["details"] == {"name": "dup", "kind": "configmaps"}
    assert st["message"] == 'configmaps "dup" already exists'


def test_get_missing_is_404_not_found_status(api: Any) -> None:
    """API conventions "Response Status Kind": 404 with ``reason: NotFound``; named groups are
    qualified in the message (``jobs.batch "x" not found``) and in ``details.group``."""
    with pytest.raises(ApiException) as ei:
        client.CoreV1Api(api).read_namespaced_pod("nope", "default")
    assert ei.value.status == 404
    st = _status(ei.value)
    assert st["reason"] == "NotFound" and st["message"] == 'pods "nope" not found'
    with pytest.raises(ApiException) as ei:
        client.BatchV1Api(api).read_namespaced_job("nope", "default")
    st = _status(ei.value)
    assert st["message"] == 'jobs.batch "nope" not found'
    assert st["details"] == {"name": "nope", "kind": "jobs", "group": "batch"}


def test_server_sets_uid_creation_timestamp_generation(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API conventions "Metadata": ``uid`` (unique in time and space), ``creationTimestamp``
    (RFC 3339, from the server's clock, here the injected FakeClock) and ``generation`` are set
    by the server; client-supplied values are ignored."""
    v1 = client.CoreV1Api(api)
    a = v1.create_namespaced_config_map(
        "default", _cm("a", uid="client-supplied", creationTimestamp="2000-01-01T00:00:00Z")
    )
    b = v1.create_namespaced_config_map("default", _cm("b"))
    assert a.metadata.uid and a.metadata.uid != "client-supplied" and a.metadata.uid != b.metadata.uid
    assert a.metadata.creation_timestamp == aicr_fake_cluster.clock.now().replace(microsecond=0)
    assert a.metadata.generation == 1
    aicr_fake_cluster.advance(90)
    c = v1.create_namespaced_config_map("default", _cm("c"))
    assert (c.metadata.creation_timestamp - a.metadata.creation_timestamp).total_seconds() == 90


def test_generate_name(api: Any) -> None:
    """API conventions "Idempotency": with ``generateName`` and no name, the server appends a
    random 5-character suffix to the prefix and returns the chosen name."""
    v1 = client.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "nccl-"}}
    names = {v1.create_namespaced_config_map("default", body).metadata.name for _ in range(20)}
    assert len(names) == 20
    assert all(n.startswith("nccl-") and len(n) == len("nccl-") + 5 for n in names)


def test_missing_name_and_invalid_name_are_422(api: Any) -> None:
    """API conventions "HTTP Status codes": 422 Unprocessable Entity (``reason: Invalid``) for
    validation errors such as a missing name or a name that is not a DNS-1123 subdomain."""
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    assert ei.value.status == 422 and _status(ei.value)["reason"] == "Invalid"
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("default", _cm("Bad_Name"))
    assert ei.value.status == 422


def test_resource_version_is_global_and_monotonic(api: Any) -> None:
    """API concepts "Resource versions": every write gets a new resourceVersion; lists report the
    collection's version. (Clients must treat them as opaque; the fake uses one increasing counter
    across all resources, like etcd's revision.)"""
    v1 = client.CoreV1Api(api)
    seen = []
    for i in range(5):
        seen.append(int(v1.create_namespaced_config_map("default", _cm(f"m{i}")).metadata.resource_version))
        seen.append(int(v1.create_namespaced_pod("default", _pod(f"p{i}")).metadata.resource_version))
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    listed = v1.list_namespaced_config_map("default")
    assert int(listed.metadata.resource_version) >= seen[-1]


# --- update / conflicts ------------------------------------------------------------------------


def test_update_with_stale_resource_version_is_409_conflict(api: Any) -> None:
    """API conventions "Concurrency Control and Consistency": a PUT whose
    ``metadata.resourceVersion`` is not current fails with 409 Conflict; with the current one it
    succeeds and bumps the version."""
    v1 = client.CoreV1Api(api)
    created = v1.create_namespaced_config_map("default", _cm("cc", {"a": "1"}))
    created.data = {"a": "2"}
    updated = v1.replace_namespaced_config_map("cc", "default", created)  # current rv: ok
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.data = {"a": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as ei:
        v1.replace_namespaced_config_map("cc", "default", created)
    assert ei.value.status == 409
    st = _status(ei.value)
    assert st["reason"] == "Conflict"
    assert "the object has been modified" in st["message"]


def test_noop_update_keeps_resource_version(api: Any) -> None:
    """API concepts "Resource versions": a write that changes nothing does not produce a new
    version (the apiserver short-circuits no-op updates)."""
    v1 = client.CoreV1Api(api)
    created = v1.create_namespaced_config_map("default", _cm("same", {"a": "1"}))
    again = v1.patch_namespaced_config_map("same", "default", {"data": {"a": "1"}})
    assert again.metadata.resource_version == created.metadata.resource_version


def test_update_of_missing_object_is_404(api: Any) -> None:
    """API conventions "HTTP Status codes": PUT to a missing resource is 404 (no create-on-update
    for these types)."""
    with pytest.raises(ApiException) as ei:
        client.CoreV1Api(api).replace_namespaced_config_map("ghost", "default", _cm("ghost"))
    assert ei.value.status == 404


def test_generation_increments_on_spec_change_only(api: Any) -> None:
    """API conventions "Metadata": ``generation`` is a sequence number of the desired state; it
    moves when spec changes, not on status writes."""
    apps = client.AppsV1Api(api)
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    assert apps.create_namespaced_deployment("default", dep).metadata.generation == 1
    assert (
        apps.patch_namespaced_deployment("d", "default", {"spec": {"replicas": 3}}).metadata.generation == 2
    )
    st = apps.patch_namespaced_deployment_status("d", "default", {"status": {"replicas": 3}})
    assert st.metadata.generation == 2


# --- status subresource ------------------------------------------------------------------------


def test_status_subresource_is_separate_from_spec(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API conventions "Spec and Status": with a ``/status`` subresource, writes to the main
    resource ignore ``status`` and writes to ``/status`` change only ``status``; create resets it."""
    aicr_fake_cluster.sim.enabled = False  # no Job controller writing status concurrently
    batch = client.BatchV1Api(api)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}
        },
        "status": {"succeeded": 5},
    }
    created = batch.create_namespaced_job("default", job)
    assert not (created.status and created.status.succeeded)  # create ignores status
    patched = batch.patch_namespaced_job(
        "j", "default", {"status": {"succeeded": 7}, "metadata": {"labels": {"x": "y"}}}
    )
    assert patched.metadata.labels["x"] == "y"
    assert not (patched.status and patched.status.succeeded)  # main resource ignores status
    via_status = batch.patch_namespaced_job_status(
        "j",
        "default",
        {"status": {"succeeded": 1}, "metadata": {"labels": {"x": "z"}}, "spec": {"parallelism": 9}},
    )
    assert via_status.status.succeeded == 1
    assert via_status.metadata.labels["x"] == "y"  # /status ignores metadata ...
    assert via_status.spec.parallelism == 1  # ... and spec
    # PUT on /status too
    via_status.status.succeeded = 2
    replaced = batch.replace_namespaced_job_status("j", "default", via_status)
    assert replaced.status.succeeded == 2


def test_pod_create_sets_pending_phase(api: Any) -> None:
    """Pod registry create strategy: status is reset to ``phase: Pending`` with a QoS class."""
    pod = client.CoreV1Api(api).create_namespaced_pod(
        "default", {**_pod("p"), "status": {"phase": "Running"}}
    )
    assert pod.status.phase == "Pending"
    assert pod.status.qos_class == "BestEffort"
    assert pod.spec.scheduler_name == "default-scheduler"


# --- patch -------------------------------------------------------------------------------------


def test_json_merge_patch(api: Any) -> None:
    """RFC 7386 via ``application/merge-patch+json`` (API concepts "Patch"): maps merge,
    ``null`` deletes, lists are replaced."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_pod("default", _pod("mp", labels={"a": "1", "b": "2"}))
    out = v1.patch_namespaced_pod(
        "mp",
        "default",
        {
            "metadata": {"labels": {"a": None, "c": "3"}},
            "spec": {"containers": [{"name": "other", "image": "x"}]},
        },
        _content_type="application/merge-patch+json",
    )
    assert out.metadata.labels == {"b": "2", "c": "3"}
    assert [c.name for c in out.spec.containers] == ["other"]  # list replaced


def test_strategic_merge_patch_merges_lists_by_key(api: Any) -> None:
    """Strategic merge patch (the client's default for dict bodies on built-in types): lists with
    a ``patchMergeKey`` merge by it (containers by ``name``), ``$patch: delete`` removes an item,
    and ``metadata.finalizers`` merges as a set."""
    v1 = client.CoreV1Api(api)
    pod = _pod("smp", finalizers=["a/one"])
    pod["spec"]["containers"].append({"name": "side", "image": "s"})
    v1.create_namespaced_pod("default", pod)
    out = v1.patch_namespaced_pod(
        "smp",
        "default",
        {
            "metadata": {"finalizers": ["b/two"]},
            "spec": {"containers": [{"name": "main", "image": "busybox:2"}]},
        },
    )
    assert {c.name: c.image for c in out.spec.containers} == {"main": "busybox:2", "side": "s"}
    assert out.metadata.finalizers == ["a/one", "b/two"]
    out = v1.patch_namespaced_pod(
        "smp",
        "default",
        {
            "spec": {"containers": [{"name": "side", "$patch": "delete"}]},
            "$deleteFromPrimitiveList/finalizers": ["a/one"],
        },
    )
    assert [c.name for c in out.spec.containers] == ["main"]
    v1.patch_namespaced_pod(
        "smp", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one", "b/two"]}}
    )


def test_strategic_merge_patch_on_custom_resource_is_415(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API concepts "Patch": strategic merge patch is not supported for custom resources; the
    server answers 415 Unsupported Media Type. (CustomObjectsApi sends merge-patch by default.)"""
    from aicr_pytest.testing.profiles import crd

    aicr_fake_cluster.add(crd("example.com", "gadgets", "Gadget"))
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "gadgets",
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"a": 1}},
    )
    out = custom.patch_namespaced_custom_object(
        "example.com", "v1", "default", "gadgets", "g", {"spec": {"b": 2}}
    )
    assert out["spec"] == {"a": 1, "b": 2}
    with pytest.raises(ApiException) as ei:
        custom.patch_namespaced_custom_object(
            "example.com", "v1", "default", "gadgets", "g", {"spec": {"c": 3}},
            _content_type="application/strategic-merge-patch+json",
        )  # fmt: skip
    assert ei.value.status == 415


def test_json_patch(api: Any) -> None:
    """RFC 6902 via ``application/json-patch+json`` (the client picks it for list bodies); a
    failing ``test`` operation rejects the whole patch."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("default", _cm("jp", {"a": "1"}))
    out = v1.patch_namespaced_config_map(
        "jp", "default", [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/a"}]
    )
    assert out.data == {"b": "2"}
    with pytest.raises(ApiException) as ei:
        v1.patch_namespaced_config_map("jp", "default", [{"op": "test", "path": "/data/b", "value": "nope"}])
    assert ei.value.status == 422


def test_server_side_apply_creates_then_merges(api: Any) -> None:
    """API concepts "Server-Side Apply" (simplified, no managedFields): PATCH with
    ``application/apply-patch+yaml`` needs ``fieldManager``, creates a missing object (201) and
    merges into an existing one."""
    v1 = client.CoreV1Api(api)
    body = _cm("ssa", {"a": "1"})
    with pytest.raises(ApiException) as ei:
        v1.patch_namespaced_config_map("ssa", "default", body, _content_type="application/apply-patch+yaml")
    assert ei.value.status == 400
    _, code, _ = v1.patch_namespaced_config_map_with_http_info(
        "ssa", "default", body, field_manager="aicr", _content_type="application/apply-patch+yaml"
    )
    assert code == 201
    body["data"] = {"a": "2"}
    second = v1.patch_namespaced_config_map(
        "ssa", "default", body, field_manager="aicr", _content_type="application/apply-patch+yaml"
    )
    assert second.data == {"a": "2"}


# --- delete / finalizers / GC ------------------------------------------------------------------


def test_delete_returns_200_with_status_or_object(api: Any) -> None:
    """Apiserver delete handler: 200 with a ``Status`` (``status: Success``, ``details``) for most
    kinds; the deleted object for kinds whose registry returns it (pods)."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("default", _cm("gone"))
    data, code, _ = v1.delete_namespaced_config_map_with_http_info("gone", "default")
    assert code == 200
    assert data["kind"] == "Status" and data["status"] == "Success"
    assert data["details"]["name"] == "gone" and data["details"]["kind"] == "configmaps"
    v1.create_namespaced_pod("default", _pod("pgone"))
    deleted = v1.delete_namespaced_pod("pgone", "default")
    assert deleted.metadata.name == "pgone" and deleted.kind == "Pod"
    with pytest.raises(ApiException) as ei:
        v1.read_namespaced_pod("pgone", "default")
    assert ei.value.status == 404
    with pytest.raises(ApiException) as ei:
        v1.delete_namespaced_pod("pgone", "default")
    assert ei.value.status == 404


def test_finalizers_keep_object_with_deletion_timestamp(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Finalizers (https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/):
    DELETE on an object with finalizers sets ``deletionTimestamp`` and keeps it (the response is
    the object); removing the last finalizer deletes it. 202 Accepted is answered only when the
    caller sets ``orphanDependents=false``, exactly as the apiserver's delete handler does."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("default", _cm("fin", finalizers=["example.com/hold"]))
    data, code, _ = v1.delete_namespaced_config_map_with_http_info("fin", "default")
    assert code == 200
    assert data["metadata"]["deletionTimestamp"] == aicr_fake_cluster.clock.timestamp()
    still = v1.read_namespaced_config_map("fin", "default")
    assert still.metadata.deletion_timestamp is not None
    v1.patch_namespaced_config_map("fin", "default", [{"op": "remove", "path": "/metadata/finalizers"}])
    with pytest.raises(ApiException) as ei:
        v1.read_namespaced_config_map("fin", "default")
    assert ei.value.status == 404
    v1.create_namespaced_config_map("default", _cm("fin2", finalizers=["example.com/hold"]))
    _, code, _ = v1.delete_namespaced_config_map_with_http_info("fin2", "default", orphan_dependents=False)
    assert code == 202


def test_garbage_collection_propagation(api: Any) -> None:
    """Garbage collection (https://kubernetes.io/docs/concepts/architecture/garbage-collection/):
    dependents named by ``ownerReferences`` are deleted with ``Background``/``Foreground``
    propagation and kept with ``Orphan``; batch/v1 Jobs orphan their pods by default (the API
    answers with a ``Warning`` header saying so)."""
    v1, batch = client.CoreV1Api(api), client.BatchV1Api(api)

    def job_with_pod(name: str) -> None:
        job = batch.create_namespaced_job(
            "default",
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
                    }
                },
            },
        )
        ref = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": job.metadata.uid,
            "controller": True,
        }
        v1.create_namespaced_pod("default", _pod(f"{name}-manual", ownerReferences=[ref]))

    def pods_of(name: str) -> list[str]:
        return [
            p.metadata.name
            for p in v1.list_namespaced_pod("default").items
            if p.metadata.name.startswith(name)
        ]

    job_with_pod("bg")
    assert pods_of("bg")
    batch.delete_namespaced_job("bg", "default", propagation_policy="Background")
    assert pods_of("bg") == []
    job_with_pod("fg")
    batch.delete_namespaced_job("fg", "default", body=client.V1DeleteOptions(propagation_policy="Foreground"))
    assert pods_of("fg") == []
    job_with_pod("orphan")
    _, _, headers = batch.delete_namespaced_job_with_http_info("orphan", "default")
    assert "child pods are preserved" in headers.get("Warning", "")
    survivors = [p for p in v1.list_namespaced_pod("default").items if p.metadata.name.startswith("orphan")]
    assert survivors and all(not p.metadata.owner_references for p in survivors)


def test_delete_collection_with_selector(api: Any) -> None:
    """API concepts "Collections": DELETE on a collection deletes the items matching the selector."""
    v1 = client.CoreV1Api(api)
    for i in range(4):
        v1.create_namespaced_config_map("default", _cm(f"dc{i}", labels={"run": "a" if i % 2 else "b"}))
    v1.delete_collection_namespaced_config_map("default", label_selector="run=a")
    left = {c.metadata.name for c in v1.list_namespaced_config_map("default", label_selector="run").items}
    assert left == {"dc0", "dc2"}


# --- namespaces --------------------------------------------------------------------------------


def test_namespace_lifecycle(api: Any) -> None:
    """Namespaces (https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/)
    and the NamespaceLifecycle admission plugin: creating in a missing namespace is 404
    ``namespaces "x" not found``; a new namespace is ``Active`` with the ``kubernetes`` finalizer;
    deleting it makes it ``Terminating`` (creates there are 403 Forbidden) and deletes its content;
    it disappears once empty."""
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("missing", _cm("x"))
    assert ei.value.status == 404 and _status(ei.value)["message"] == 'namespaces "missing" not found'
    ns = v1.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "work"}})
    assert ns.status.phase == "Active" and ns.spec.finalizers == ["kubernetes"]
    v1.create_namespaced_config_map("work", _cm("held", finalizers=["example.com/hold"]))
    v1.create_namespaced_config_map("work", _cm("free"))
    deleted = v1.delete_namespace("work")
    assert deleted["status"]["phase"] == "Terminating"
    assert v1.read_namespace("work").status.phase == "Terminating"
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("work", _cm("late"))
    assert ei.value.status == 403 and _status(ei.value)["reason"] == "Forbidden"
    assert "is being terminated" in _status(ei.value)["message"]
    assert [c.metadata.name for c in v1.list_namespaced_config_map("work").items] == ["held"]
    v1.patch_namespaced_config_map("held", "work", [{"op": "remove", "path": "/metadata/finalizers"}])
    with pytest.raises(ApiException) as ei:
        v1.read_namespace("work")
    assert ei.value.status == 404


def test_body_namespace_must_match_path(api: Any) -> None:
    """API conventions: an object's namespace must match the request path's (400 BadRequest)."""
    with pytest.raises(ApiException) as ei:
        client.CoreV1Api(api).create_namespaced_config_map("default", _cm("x", namespace="kube-system"))
    assert ei.value.status == 400


# --- lists, selectors, pagination --------------------------------------------------------------


def test_list_kind_and_metadata(api: Any) -> None:
    """API conventions "Lists and Simple kinds": a list is ``kind: <Kind>List`` with
    ``metadata.resourceVersion`` and ``items`` whose ``apiVersion``/``kind`` are filled in."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_pod("default", _pod("l1"))
    body = json.loads(v1.list_namespaced_pod("default", _preload_content=False).data)
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"]
    assert body["items"][0]["kind"] == "Pod" and body["items"][0]["apiVersion"] == "v1"
    typed = v1.list_namespaced_pod("default")
    assert typed.kind == "PodList"


def test_all_namespaces_list(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API concepts "Resource URIs": ``/api/v1/pods`` lists across namespaces."""
    aicr_fake_cluster.add(_pod("a", namespace="ns1") | {"metadata": {"name": "a", "namespace": "ns1"}})
    aicr_fake_cluster.add({**_pod("b"), "metadata": {"name": "b", "namespace": "ns2"}})
    items = client.CoreV1Api(api).list_pod_for_all_namespaces().items
    assert {(p.metadata.namespace, p.metadata.name) for p in items} == {("ns1", "a"), ("ns2", "b")}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("gpu=h100", {"n1", "n2"}),
        ("gpu==h100", {"n1", "n2"}),
        ("gpu!=h100", {"n3", "n4"}),  # != also matches objects without the label
        ("gpu in (h100,a100)", {"n1", "n2", "n3"}),
        ("gpu notin (h100)", {"n3", "n4"}),
        ("gpu", {"n1", "n2", "n3"}),
        ("!gpu", {"n4"}),
        ("gpu=h100,zone=b", {"n2"}),
        ("count>4", {"n2"}),
    ],
)
def test_label_selectors(api: Any, aicr_fake_cluster: FakeCluster, selector: str, expected: set[str]) -> None:
    """Labels and selectors
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors):
    equality (``=``, ``==``, ``!=``) and set-based (``in``, ``notin``, exists, ``!``) requirements,
    comma = AND; ``!=``/``notin`` match objects lacking the key."""
    for name, labels in {
        "n1": {"gpu": "h100", "zone": "a", "count": "4"},
        "n2": {"gpu": "h100", "zone": "b", "count": "8"},
        "n3": {"gpu": "a100"},
        "n4": {},
    }.items():
        aicr_fake_cluster.add(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        )
    got = {n.metadata.name for n in client.CoreV1Api(api).list_node(label_selector=selector).items}
    assert got == expected


def test_bad_label_selector_is_400(api: Any) -> None:
    """Label selector syntax errors are 400 BadRequest."""
    with pytest.raises(ApiException) as ei:
        client.CoreV1Api(api).list_node(label_selector="a in (b")
    assert ei.value.status == 400


def test_field_selectors(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Field selectors (https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/):
    ``metadata.name``, ``metadata.namespace``, ``spec.nodeName``, ``status.phase`` with ``=``/``!=``;
    unsupported fields are 400 ``field label not supported``."""
    aicr_fake_cluster.sim.enabled = False  # keep phases as written
    for name, node, phase in (
        ("a", "n1", "Running"),
        ("b", "n1", "Succeeded"),
        ("c", "n2", "Running"),
        ("d", None, "Pending"),
    ):
        pod = _pod(name, node=node)
        pod["status"] = {"phase": phase}
        aicr_fake_cluster.add(pod)
    v1 = client.CoreV1Api(api)

    def names(sel: str) -> set[str]:
        return {p.metadata.name for p in v1.list_pod_for_all_namespaces(field_selector=sel).items}

    assert names("spec.nodeName=n1") == {"a", "b"}
    assert names("spec.nodeName=n1,status.phase!=Succeeded") == {"a"}
    assert names("status.phase=Running") == {"a", "c"}
    assert names("spec.nodeName=") == {"d"}
    assert names("metadata.name=c") == {"c"}
    assert names("metadata.namespace=default,metadata.name!=a") == {"b", "c", "d"}
    with pytest.raises(ApiException) as ei:
        v1.list_pod_for_all_namespaces(field_selector="spec.bogus=1")
    assert ei.value.status == 400 and "field label not supported" in _status(ei.value)["message"]


def test_pagination_with_limit_and_continue(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """API concepts "Retrieving large results sets in chunks": ``limit`` bounds a page,
    ``metadata.continue`` (opaque) fetches the next, the last page has no token; items come in key
    order, each exactly once, and selectors apply across pages."""
    for i in range(25):
        aicr_fake_cluster.add(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i:02d}", "labels": {"odd": str(i % 2)}},
            }
        )
    v1 = client.CoreV1Api(api)
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = v1.list_node(limit=10, _continue=token)
        pages += 1
        seen.extend(n.metadata.name for n in page.items)
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 25 - len(seen)
    assert pages == 3 and seen == sorted(seen) and len(seen) == 25
    odd: list[str] = []
    token = None
    while True:
        page = v1.list_node(limit=4, _continue=token, label_selector="odd=1")
        odd.extend(n.metadata.name for n in page.items)
        token = page.metadata._continue
        if not token:
            break
    assert odd == [f"node-{i:02d}" for i in range(1, 25, 2)]
    with pytest.raises(ApiException) as ei:
        v1.list_node(limit=2, _continue="not-a-token")
    assert ei.value.status == 400


def test_creation_timestamp_is_rfc3339(api: Any) -> None:
    """API conventions "Metadata"/"Times": timestamps are RFC 3339 UTC strings."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("default", _cm("ts"))
    raw = json.loads(v1.read_namespaced_config_map("ts", "default", _preload_content=False).data)
    parsed = datetime.strptime(raw["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert parsed.year >= 2026
