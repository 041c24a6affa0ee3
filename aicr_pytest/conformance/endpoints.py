"""Reaching in-cluster HTTP endpoints (the DCGM exporter, Prometheus) from wherever aicr-pytest runs.

AICR's conformance checks run in a Job inside the cluster and dial ``http://<svc>.<ns>.svc:<port>``.
aicr-pytest usually runs on a laptop or a CI runner, where ``*.svc`` names do not resolve, so an
endpoint is reached one of two ways:

* ``proxy`` (outside a pod, the default there): through the API server's service proxy,
  ``GET /api/v1/namespaces/<ns>/services/<name>:<port>/proxy/<path>`` -- it needs only the
  kubeconfig and ``get services/proxy``;
* ``direct`` (inside a pod, ``KUBERNETES_SERVICE_HOST`` set): a plain HTTP GET of the in-cluster URL,
  as AICR does.

``AICR_ENDPOINT_ACCESS=proxy|direct`` overrides the choice (``auto`` or empty: the rule above).

Whatever the route, messages name the in-cluster URL (as AICR's do) and the route tried. Three
outcomes (AICR's ``httpGet``):

* the endpoint answered: :class:`HttpAnswer` (any status; :meth:`HttpAnswer.require_ok` turns a
  non-200 into ``[INTERNAL] HTTP <code> from <url>`` and an oversize body into ``[INVALID_REQUEST]
  response from <url> exceeds 1048576 byte limit`` -- a failed check: the endpoint said so);
* it could not be reached -- a transport error, or the API server's own ``Status`` saying the
  Service is missing, has no endpoints or refused the connection: :class:`EndpointUnreachable`
  (``[SERVICE_UNAVAILABLE] failed to reach <url>: <cause> (tried: <route>)``), which is CTRF
  ``other``: aicr-pytest could not look, so it says nothing about the cluster's metrics;
* the proxy request itself was refused by RBAC: :class:`~aicr_pytest.kube.errors.AccessDenied`.

:func:`api_get` is the same single attempt for an aggregated API served through the API server
(``/apis/custom.metrics.k8s.io/...``, ``/apis/external.metrics.k8s.io/...``).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from aicr_pytest.core.errors import CheckFailed, Inconclusive, UsageError
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiUnreachable
from aicr_pytest.kube.rawhttp import RawResponse, apiserver_status, send_once, service_proxy_path
from aicr_pytest.kube.transport import Target

__all__ = [
    "ACCESS_ENV",
    "HTTP_TIMEOUT_S",
    "MAX_BODY_BYTES",
    "EndpointAnswerError",
    "EndpointUnreachable",
    "Endpoints",
    "HttpAnswer",
    "ServiceEndpoint",
    "access_mode",
    "api_get",
]

#: Environment variable that forces the route (``proxy``, ``direct``; ``auto``/empty: by where we run).
ACCESS_ENV = "AICR_ENDPOINT_ACCESS"
#: AICR's ``httpGet``: 30 s total, body capped at 1 MiB (larger is an error, never truncated).
HTTP_TIMEOUT_S = 30.0
MAX_BODY_BYTES = 1 << 20


class EndpointUnreachable(Inconclusive):
    """The endpoint could not be reached at all (CTRF ``other``); ``url``/``route`` say what was tried."""

    def __init__(self, url: str, route: str, cause: str) -> None:
        self.url = url
        self.route = route
        self.cause = cause
        super().__init__(f"[SERVICE_UNAVAILABLE] failed to reach {url}: {cause} (tried: {route})")


class EndpointAnswerError(CheckFailed):
    """The endpoint answered, and the answer fails the check (non-200, oversize body)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ServiceEndpoint:
    """An HTTP port of a Service: ``http://<service>.<namespace>.svc:<port>`` in the cluster."""

    namespace: str
    service: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.service}.{self.namespace}.svc:{self.port}"


@dataclass(frozen=True)
class HttpAnswer:
    """What the endpoint answered; ``url`` is the in-cluster URL asked for, ``route`` how."""

    status: int
    body: bytes
    url: str
    route: str
    oversize: bool = False

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def require_ok(self) -> HttpAnswer:
        """Fail unless the endpoint said 200 with a body within the cap (AICR's ``httpGet``)."""
        if self.oversize:
            raise EndpointAnswerError(
                f"[INVALID_REQUEST] response from {self.url} exceeds {MAX_BODY_BYTES} byte limit",
                status=self.status,
            )
        if self.status != 200:
            raise EndpointAnswerError(f"[INTERNAL] HTTP {self.status} from {self.url}", status=self.status)
        return self


def access_mode(env: Mapping[str, str]) -> str:
    """``proxy`` or ``direct`` (module docstring); an unknown ``AICR_ENDPOINT_ACCESS`` is a usage error."""
    wanted = (env.get(ACCESS_ENV) or "").strip().lower()
    if wanted in ("proxy", "direct"):
        return wanted
    if wanted not in ("", "auto"):
        raise UsageError(f"{ACCESS_ENV}={env.get(ACCESS_ENV)!r}: expected proxy, direct or auto")
    return "direct" if (env.get("KUBERNETES_SERVICE_HOST") or "").strip() else "proxy"


#: ``opener(url, timeout, max_bytes) -> (status, body)``; raises OSError when nothing answers.
DirectOpener = Callable[[str, float, int], tuple[int, bytes]]


def _urllib_open(url: str, timeout: float, max_bytes: int) -> tuple[int, bytes]:
    request = urllib.request.Request(url, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read(max_bytes + 1))
    except urllib.error.HTTPError as err:  # an answer, not a transport failure
        with err:
            return int(err.code), bytes(err.read(max_bytes + 1) or b"")


class Endpoints:
    """How this run reaches in-cluster HTTP endpoints (``mode``: ``proxy`` or ``direct``)."""

    def __init__(
        self,
        cluster: Cluster,
        env: Mapping[str, str],
        *,
        opener: DirectOpener = _urllib_open,
        timeout: float = HTTP_TIMEOUT_S,
    ) -> None:
        self.cluster = cluster
        self.mode = access_mode(env)
        self.opener = opener
        self.timeout = timeout

    def url(self, endpoint: ServiceEndpoint, path: str, query: Sequence[tuple[str, str]] = ()) -> str:
        """The in-cluster URL of ``path`` (what AICR would dial, and what messages name)."""
        text = endpoint.url + path
        return text + ("?" + urlencode(list(query), quote_via=quote) if query else "")

    def route(self, endpoint: ServiceEndpoint, path: str, query: Sequence[tuple[str, str]] = ()) -> str:
        """The request this run sends for it, described."""
        if self.mode == "direct":
            return f"GET {self.url(endpoint, path, query)} (direct, in-cluster)"
        proxied = service_proxy_path(endpoint.namespace, endpoint.service, endpoint.port, path)
        if query:
            proxied += "?" + urlencode(list(query), quote_via=quote)
        return f"GET {proxied} (the API server's service proxy)"

    def get(self, endpoint: ServiceEndpoint, path: str, query: Sequence[tuple[str, str]] = ()) -> HttpAnswer:
        """One GET of ``path`` (no retry); raises :class:`EndpointUnreachable` (module docstring)."""
        url = self.url(endpoint, path, query)
        route = self.route(endpoint, path, query)
        if self.mode == "direct":
            try:
                status, body = self.opener(url, self.timeout, MAX_BODY_BYTES)
            except (OSError, ValueError) as exc:
                raise EndpointUnreachable(url, route, f"{type(exc).__name__}: {exc}") from exc
            return HttpAnswer(status, body[:MAX_BODY_BYTES], url, route, len(body) > MAX_BODY_BYTES)
        target = Target(
            "get", "", "services/proxy", endpoint.namespace, f"{endpoint.service}:{endpoint.port}"
        )
        try:
            raw = send_once(
                self.cluster,
                "GET",
                service_proxy_path(endpoint.namespace, endpoint.service, endpoint.port, path),
                target,
                query=list(query),
                timeout=self.timeout,
                max_bytes=MAX_BODY_BYTES,
            )
        except ApiUnreachable as exc:
            raise EndpointUnreachable(url, route, str(exc)) from exc
        status_doc = apiserver_status(raw) if raw.status >= 400 else None
        if status_doc is not None:
            message = str(status_doc.get("message") or status_doc.get("reason") or "")
            raise EndpointUnreachable(url, route, f"HTTP {raw.status} from the API server: {message}")
        return HttpAnswer(raw.status, raw.body, url, route, raw.oversize)


def api_get(cluster: Cluster, path: str, target: Target, *, timeout: float = HTTP_TIMEOUT_S) -> RawResponse:
    """One GET of an (aggregated) API path through the API server, any status returned as it is."""
    return send_once(cluster, "GET", path, target, accept="application/json", timeout=timeout)


def api_error_text(raw: RawResponse) -> str:
    """A failed API answer as one line, the way client-go prints it (the Status message, else the body)."""
    doc: Any = apiserver_status(raw)
    if doc is not None and doc.get("message"):
        return str(doc["message"])
    text = raw.text().strip()
    return text[:300] if text else f"HTTP {raw.status} {raw.reason}".strip()
