"""One unretried request through the API server whose answer the caller reads as it is.

:meth:`~aicr_pytest.kube.client.Cluster.request` retries 5xx and maps every non-2xx status to an
exception. That is right for the API's own objects, and wrong for an in-cluster HTTP endpoint
reached through the API server's service proxy (``/api/v1/namespaces/<ns>/services/<name>/proxy/...``)
or an aggregated API (``/apis/custom.metrics.k8s.io/...``): there a 404 or a 503 may be the
endpoint's own answer, which the check judges, or the API server saying it could not reach the
endpoint at all. :func:`send_once` sends exactly one request and returns status, headers and at
most ``max_bytes + 1`` bytes of the body; :func:`apiserver_status` tells an API server ``Status``
apart from a body the endpoint wrote.

What still raises: a transport failure between us and the API server (:class:`ApiUnreachable`) and
an RBAC refusal of the proxy request itself (:class:`AccessDenied`: granting more RBAC would help).
The request's permission is recorded like every facade request (``enforce_declared`` included).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import MSG_UNREACHABLE, AccessDenied, ApiUnreachable, ClusterUnreachable
from aicr_pytest.kube.transport import Query, Target, _transport_errors, map_status_error

__all__ = ["RawResponse", "apiserver_status", "pod_proxy_path", "send_once", "service_proxy_path"]


@dataclass(frozen=True)
class RawResponse:
    """What came back: ``body`` holds at most ``max_bytes + 1`` bytes (``oversize`` says it was cut)."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes
    oversize: bool = False

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def service_proxy_path(namespace: str, service: str, port: int | str, path: str, scheme: str = "") -> str:
    """``/api/v1/namespaces/<ns>/services/[<scheme>:]<name>:<port>/proxy<path>`` (path starts with ``/``)."""
    target = f"{scheme}:{service}:{port}" if scheme else f"{service}:{port}"
    sub = path if path.startswith("/") else "/" + path
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/services/{quote(target, safe=':')}/proxy{sub}"


def pod_proxy_path(namespace: str, pod: str, port: int | str, path: str) -> str:
    """``/api/v1/namespaces/<ns>/pods/<name>:<port>/proxy<path>`` (path starts with ``/``)."""
    sub = path if path.startswith("/") else "/" + path
    target = quote(f"{pod}:{port}", safe=":")
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{target}/proxy{sub}"


def apiserver_status(response: RawResponse) -> dict[str, Any] | None:
    """The API server's own ``Status`` object when ``response`` is one (not the endpoint's body)."""
    ctype = str(response.headers.get("Content-Type") or response.headers.get("content-type") or "")
    if "json" not in ctype:
        return None
    try:
        doc = json.loads(response.body)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("apiVersion") == "v1":
        return doc
    return None


def send_once(
    cluster: Cluster,
    method: str,
    path: str,
    target: Target,
    *,
    query: Query = (),
    body: bytes | None = None,
    accept: str = "*/*",
    timeout: float = 30.0,
    max_bytes: int = 1 << 20,
) -> RawResponse:
    """Send one request (no retry) and return its answer, whatever the status (module docstring)."""
    if cluster.tripped is not None:
        raise ClusterUnreachable(str(cluster.tripped), reach=cluster.tripped.reach)
    cluster._record(target)
    api_client = cluster.api_client
    headers: dict[str, str] = dict(api_client.default_headers)
    headers["Accept"] = accept
    if body is not None:
        headers["Content-Type"] = "application/json"
    queries: list[tuple[str, str]] = [(k, str(v)) for k, v in query]
    api_client.update_params_for_auth(headers, queries, ["BearerToken"], path, method, body)
    url = cluster.host + path
    if queries:
        url += "?" + urlencode(queries, quote_via=quote)
    with cluster._lock:
        cluster.stats.requests += 1
        cluster.stats.by_verb[target.verb] += 1
    try:
        raw = api_client.call_api(
            method,
            url,
            header_params=headers,
            body=body,
            _request_timeout=(min(10.0, timeout), timeout),
        )
        resp = raw.response
        try:
            data: bytes = resp.read(max_bytes + 1) or b""
        finally:
            with contextlib.suppress(Exception):
                resp.release_conn()
    except _transport_errors() as exc:
        raise ApiUnreachable(
            MSG_UNREACHABLE.format(
                method=method, path=path, cause=f"{type(exc).__name__}: {exc}", attempts=1
            ),
            verb=target.verb,
            group=target.group,
            resource=target.resource,
            namespace=target.namespace,
            name=target.name,
        ) from exc
    except Exception as exc:
        if getattr(exc, "status", None) == 0:  # the client's wrapping of TLS errors
            raise ApiUnreachable(
                MSG_UNREACHABLE.format(method=method, path=path, cause=exc, attempts=1),
                verb=target.verb,
                group=target.group,
                resource=target.resource,
            ) from exc
        raise
    answer = RawResponse(
        status=int(raw.status),
        reason=str(raw.reason or ""),
        headers=dict(resp.headers or {}),
        body=data[:max_bytes],
        oversize=len(data) > max_bytes,
    )
    if answer.status in (401, 403) and apiserver_status(answer) is not None:
        err = map_status_error(answer.status, answer.reason, answer.body, target)
        if isinstance(err, AccessDenied):
            raise err
    return answer
