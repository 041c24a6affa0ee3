"""The fake API server's service proxy (``/api/v1/namespaces/<ns>/services/<svc>[:<port>]/proxy/...``).

Kubernetes: "Manually constructing apiserver proxy URLs"
(https://kubernetes.io/docs/tasks/access-application-cluster/access-cluster-services/): the name
segment is ``[scheme:]name[:port]``; a missing Service is 404, a Service without ready endpoints
answers 503 ``no endpoints available for service "<name>"``.
"""

from __future__ import annotations

import json
from typing import Any

import urllib3

from aicr_pytest.testing import FakeCluster


def _svc(name: str, ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"ports": [{"name": "http", "port": 8000}]},
    }


def _call(fc: FakeCluster, method: str, path: str, body: bytes = b"") -> tuple[int, str]:
    http = urllib3.PoolManager()
    resp = http.request(
        method,
        fc.url + path,
        body=body or None,
        headers={"Authorization": f"Bearer {fc.token}", "Content-Type": "application/json"},
    )
    return resp.status, resp.data.decode()


def test_missing_service_is_404(aicr_fake_cluster: FakeCluster) -> None:
    status, text = _call(
        aicr_fake_cluster, "GET", "/api/v1/namespaces/default/services/nope:8000/proxy/v1/models"
    )
    assert status == 404
    assert json.loads(text)["reason"] == "NotFound"


def test_service_without_backend_is_503(aicr_fake_cluster: FakeCluster) -> None:
    aicr_fake_cluster.add(_svc("web"))
    status, text = _call(
        aicr_fake_cluster, "POST", "/api/v1/namespaces/default/services/web:8000/proxy/x", b"{}"
    )
    assert status == 503
    assert json.loads(text)["message"] == 'no endpoints available for service "web"'


def test_handler_gets_method_subpath_and_body(aicr_fake_cluster: FakeCluster) -> None:
    aicr_fake_cluster.add(_svc("web"))
    seen: list[tuple[str, str, bytes]] = []

    def handler(method: str, path: str, raw: bytes) -> tuple[int, str]:
        seen.append((method, path, raw))
        return 201, '{"ok": true}'

    aicr_fake_cluster.server.proxy_handlers[("default", "web")] = handler
    for name in ("web", "web:8000", "http:web:8000"):
        status, text = _call(
            aicr_fake_cluster, "POST", f"/api/v1/namespaces/default/services/{name}/proxy/v1/chat", b'{"a":1}'
        )
        assert (status, json.loads(text)) == (201, {"ok": True})
    assert seen == [("POST", "/v1/chat", b'{"a":1}')] * 3
    assert aicr_fake_cluster.request_count("POST", r"/proxy/v1/chat$") == 3


def test_faults_apply_to_proxied_paths(aicr_fake_cluster: FakeCluster) -> None:
    aicr_fake_cluster.add(_svc("web"))
    aicr_fake_cluster.server.proxy_handlers[("default", "web")] = lambda m, p, b: (200, "{}")
    aicr_fake_cluster.faults.server_error(path=r"/proxy", times=1, status=502)
    assert _call(aicr_fake_cluster, "GET", "/api/v1/namespaces/default/services/web/proxy/")[0] == 502
    assert _call(aicr_fake_cluster, "GET", "/api/v1/namespaces/default/services/web/proxy/")[0] == 200
