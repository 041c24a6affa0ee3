"""Fault injection and request counting on the fake API server.

HTTP status codes and Retry-After: API conventions "HTTP Status codes"
(https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#http-status-codes);
410 during watch: https://kubernetes.io/docs/reference/using-api/api-concepts/#410-gone-responses
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from aicr_pytest.testing import FakeCluster


def test_throttle_429_with_retry_after(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """429 TooManyRequests carries ``Retry-After`` (seconds) and ``details.retryAfterSeconds``;
    only the scripted number of matching requests fail. Note: urllib3 2.x (under the official
    client) itself retries 429/503 responses that carry Retry-After, up to 3 times."""
    fault = aicr_fake_cluster.faults.throttle("GET", r"^/api/v1/nodes$", times=1, retry_after=1)
    http = urllib3.PoolManager(retries=False)
    auth = {"Authorization": f"Bearer {aicr_fake_cluster.token}"}
    resp = http.request("GET", aicr_fake_cluster.url + "/api/v1/nodes", headers=auth)
    assert resp.status == 429 and resp.headers["Retry-After"] == "1"
    body = json.loads(resp.data)
    assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 1
    assert http.request("GET", aicr_fake_cluster.url + "/api/v1/nodes", headers=auth).status == 200
    assert fault.hits == 1
    # Through the client: two throttled answers are retried transparently by urllib3.
    aicr_fake_cluster.server.reset_counts()
    fault = aicr_fake_cluster.faults.throttle("GET", r"^/api/v1/nodes$", times=2, retry_after=0)
    assert client.CoreV1Api(api).list_node().kind == "NodeList"
    client.CoreV1Api(api).list_namespace()  # other paths never matched
    assert fault.hits == 2
    assert aicr_fake_cluster.request_count("GET", r"^/api/v1/nodes$") == 3
    assert [r.status for r in aicr_fake_cluster.server.requests][:3] == [429, 429, 200]


def test_server_error_500(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """500 InternalError ``Status`` for the next matching request, then normal service."""
    aicr_fake_cluster.faults.server_error("POST", r"/configmaps$")
    v1 = client.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("default", body)
    assert ei.value.status == 500 and json.loads(ei.value.body)["reason"] == "InternalError"
    assert v1.create_namespaced_config_map("default", body).metadata.name == "x"


def test_dropped_connection(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """A dropped connection (no response at all) surfaces as a urllib3 protocol/retry error; every
    attempt, including the client's own retries, is counted."""
    fault = aicr_fake_cluster.faults.drop_connection("GET", r"^/api/v1/nodes$", times=None)
    v1 = client.CoreV1Api(api)
    with pytest.raises((urllib3.exceptions.ProtocolError, urllib3.exceptions.MaxRetryError)):
        v1.list_node(_request_timeout=5)
    assert fault.hits >= 1
    assert aicr_fake_cluster.request_count("GET", r"^/api/v1/nodes$") == fault.hits
    fault.remaining = 0
    assert v1.list_node().kind == "NodeList"


def test_rbac_deny_403(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """403 Forbidden with the RBAC message shape naming user, verb, resource, group, namespace."""
    aicr_fake_cluster.faults.deny("GET", r"/namespaces/default/pods$", times=1)
    with pytest.raises(ApiException) as ei:
        client.CoreV1Api(api).list_namespaced_pod("default")
    assert ei.value.status == 403
    body = json.loads(ei.value.body)
    assert body["reason"] == "Forbidden"
    assert 'cannot list resource "pods" in API group "" in the namespace "default"' in body["message"]


def test_expire_next_watch_410(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """ "The next watch gets a 410": with ``timeoutSeconds`` the client raises ApiException(410);
    without it, ``kubernetes.watch.Watch`` retries once from its last resourceVersion, as
    client-go's reflector re-lists/re-watches."""
    v1 = client.CoreV1Api(api)
    aicr_fake_cluster.faults.expire_watch(r"/configmaps$")
    with pytest.raises(ApiException) as ei:
        list(watch.Watch().stream(v1.list_namespaced_config_map, "default", timeout_seconds=5))
    assert ei.value.status == 410
    rv = v1.list_namespaced_config_map("default").metadata.resource_version
    aicr_fake_cluster.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}})
    aicr_fake_cluster.faults.expire_watch(r"/configmaps$")
    w = watch.Watch()
    got = []
    for ev in w.stream(v1.list_namespaced_config_map, "default", resource_version=rv):
        got.append(ev["object"].metadata.name)
        w.stop()
    assert got == ["after"]
    assert aicr_fake_cluster.request_count("GET", r"/configmaps$", watch=True) == 3


def test_unauthenticated_request_is_401(aicr_fake_cluster: FakeCluster) -> None:
    """The server requires the kubeconfig's bearer token: no token is 401 Unauthorized."""
    http = urllib3.PoolManager()
    resp = http.request("GET", aicr_fake_cluster.url + "/api/v1/namespaces")
    assert resp.status == 401 and json.loads(resp.data)["reason"] == "Unauthorized"
    ok = http.request(
        "GET",
        aicr_fake_cluster.url + "/api/v1/namespaces",
        headers={"Authorization": f"Bearer {aicr_fake_cluster.token}"},
    )
    assert ok.status == 200


def test_request_counters(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """Per-(method, path) counters and a request log that tests and benchmarks read."""
    for i in range(30):
        aicr_fake_cluster.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:02d}"}})
    aicr_fake_cluster.server.reset_counts()
    v1 = client.CoreV1Api(api)
    token = None
    while True:
        page = v1.list_node(limit=7, _continue=token)
        token = page.metadata._continue
        if not token:
            break
    assert aicr_fake_cluster.server.counts[("GET", "/api/v1/nodes")] == 5
    assert aicr_fake_cluster.request_count("GET", "nodes") == 5
    assert [r.status for r in aicr_fake_cluster.server.requests] == [200] * 5


def test_reject_with_a_composed_status(api: Any, aicr_fake_cluster: FakeCluster) -> None:
    """``reject``: any failure ``Status`` (an admission webhook's denial), its message fixed or built
    from the request body; only the scripted number of matching requests are refused."""
    fault = aicr_fake_cluster.faults.reject(
        "POST",
        r"/configmaps$",
        status=403,
        reason="Forbidden",
        message=lambda body: f"admission webhook denied {json.loads(body)['metadata']['name']}",
        times=1,
    )
    v1 = client.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("default", body)
    status = json.loads(ei.value.body)
    assert (ei.value.status, status["reason"], status["message"]) == (
        403,
        "Forbidden",
        "admission webhook denied x",
    )
    assert v1.create_namespaced_config_map("default", body).metadata.name == "x"
    assert fault.hits == 1
    aicr_fake_cluster.faults.reject("POST", r"/configmaps$", message="spec.data: Invalid value")
    with pytest.raises(ApiException) as ei:
        v1.create_namespaced_config_map("default", {**body, "metadata": {"name": "y"}})
    status = json.loads(ei.value.body)
    assert (ei.value.status, status["reason"], status["message"]) == (
        422,
        "Invalid",
        "spec.data: Invalid value",
    )
