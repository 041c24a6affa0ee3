"""The cluster facade: one REST helper over the official ``kubernetes`` client's transport.

:func:`connect` builds a :class:`Cluster` from a kubeconfig (or in-cluster service account, see
:mod:`.kubeconfig`).  Every request — core, batch, RBAC, DRA, custom resources, discovery, logs,
watches — goes through :meth:`Cluster.request` / :meth:`Cluster.stream`, which

* builds the REST path from a :class:`~aicr_pytest.kube.resources.ResourceType`,
* records the RBAC :class:`~aicr_pytest.kube.rbac.Permission` it needs,
* retries transient failures (429 honouring ``Retry-After``, 5xx, dropped or refused connections)
  with tenacity, bounded by attempts and a total sleep budget, then raises :class:`ApiUnreachable`,
* maps 401/403 to :class:`AccessDenied` (never retried), 404 to :class:`NotFound`, 409 to
  :class:`Conflict`, 410 to :class:`Gone`, 400/422 to :class:`Invalid`
  (:func:`~aicr_pytest.kube.transport.map_status_error`),
* parses JSON with :func:`json.loads` into plain dicts (no model deserialization: a 50,000-pod list
  stays fast and small).

Around :class:`Cluster`: :mod:`.transport` (what a request is, retry bounds, the status → exception
mapping), :mod:`.streams` (streaming responses and decoded watch events), :mod:`.paging` (the next
list page fetched while the caller works on the current one), :mod:`.kubeconfig` (where the
connection comes from).  The names callers use are importable from here.

The ``kubernetes`` package is imported lazily, inside :func:`connect` and the transport calls, so
``import aicr_pytest.kube`` costs nothing in ``--no-cluster`` runs.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from aicr_pytest.kube.errors import MSG_UNREACHABLE, ApiUnreachable, Conflict, Gone, NotFound
from aicr_pytest.kube.kubeconfig import load_configuration
from aicr_pytest.kube.paging import _continue_from_status, _peek_continue, _Prefetch
from aicr_pytest.kube.rbac import (
    REQUIRED_PERMISSIONS,
    Permission,
    PermissionRecorder,
    UndeclaredPermission,
    non_resource_pattern,
)
from aicr_pytest.kube.resources import ResourceType, lookup_builtin, split_api_version
from aicr_pytest.kube.streams import Stream, WatchStream, streams_in_hand
from aicr_pytest.kube.transport import (
    _REASONS,
    JSON,
    Query,
    Response,
    RetryPolicy,
    Stats,
    Target,
    _Transient,
    _transport_errors,
    map_status_error,
    parse_retry_after,
)

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "aicr-pytest"
RUN_ID_LABEL = "aicr.run/run-id"
FIELD_MANAGER = "aicr-pytest"

_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
_List = list  # `Cluster.list` shadows the builtin inside the class body
_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
#: Whether :class:`Cluster` prefetches the next list page by default (see :meth:`Cluster.list_pages`).
PREFETCH_PAGES_DEFAULT = True


class Cluster:
    """A connection to one Kubernetes API server; every method returns plain dicts.

    ``sleep`` is what retries sleep on (inject a fake clock's ``sleep`` in tests);
    ``enforce_declared`` makes any request outside :data:`~aicr_pytest.kube.rbac.REQUIRED_PERMISSIONS`
    raise :class:`~aicr_pytest.kube.rbac.UndeclaredPermission` (the facade tests turn it on).
    ``prefetch_pages`` makes :meth:`list_pages` fetch the next page on a background thread while
    the caller works on the current one (same requests, same order; see :meth:`list_pages`).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        sleep: Callable[[float], None] = time.sleep,
        retry_policy: RetryPolicy | None = None,
        recorder: PermissionRecorder | None = None,
        enforce_declared: bool = False,
        request_timeout: tuple[float, float] = (10.0, 60.0),
        source: str = "",
        rng: random.Random | None = None,
        prefetch_pages: bool = PREFETCH_PAGES_DEFAULT,
    ) -> None:
        self.api_client = api_client
        self.sleep = sleep
        self.retry_policy = retry_policy or RetryPolicy()
        self.permissions = recorder or PermissionRecorder()
        self.enforce_declared = enforce_declared
        self.request_timeout = request_timeout
        self.source = source
        self.prefetch_pages = prefetch_pages
        self.stats = Stats()
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._discovery: dict[str, list[JSON]] = {}

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return str(self.api_client.configuration.host)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api_client.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def retry_count(self) -> int:
        return self.stats.retries

    @property
    def request_count(self) -> int:
        return self.stats.requests

    # -- the one request path ------------------------------------------------------------------
    def _record(self, target: Target) -> None:
        perm = target.permission
        if perm.is_non_resource_url:
            perm = Permission(perm.verb, "", non_resource_pattern(perm.resource))
        self.permissions.record(perm)
        if self.enforce_declared and perm not in REQUIRED_PERMISSIONS:
            raise UndeclaredPermission(
                f"request needs `{perm}`, which aicr_pytest.kube.rbac.REQUIRED_PERMISSIONS "
                "(and deploy/rbac.yaml) does not declare"
            )

    def _send_once(
        self,
        method: str,
        path: str,
        query: Query | None,
        body: Any,
        content_type: str | None,
        target: Target,
        stream: bool,
        timeout: float | tuple[float, float] | None,
    ) -> Any:
        headers: dict[str, str] = dict(self.api_client.default_headers)
        headers["Accept"] = "application/json"
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        queries: list[tuple[str, str]] = [
            (k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (query or ())
        ]
        self.api_client.update_params_for_auth(headers, queries, ["BearerToken"], path, method, body)
        url = self.host + path
        if queries:
            url += "?" + urlencode(queries, quote_via=quote)
        with self._lock:
            self.stats.requests += 1
            self.stats.by_verb[target.verb] += 1
        try:
            raw = self.api_client.call_api(
                method,
                url,
                header_params=headers,
                body=body,
                _request_timeout=timeout or self.request_timeout,
            )
        except _transport_errors() as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            # The client wraps TLS errors as ApiException(status=0): not transient, not ours to hide.
            status = getattr(exc, "status", None)
            if status == 0:
                raise ApiUnreachable(
                    MSG_UNREACHABLE.format(method=method, path=path, cause=exc, attempts=1),
                    verb=target.verb,
                    group=target.group,
                    resource=target.resource,
                ) from exc
            raise
        resp = raw.response
        status = int(raw.status)
        if 200 <= status < 300:
            if stream:
                return resp
            try:
                data = resp.data
            except _transport_errors() as exc:
                raise _Transient(f"{type(exc).__name__} while reading body: {exc}") from exc
            finally:
                with contextlib.suppress(Exception):
                    resp.release_conn()
            return Response(status, resp.headers, data or b"")
        try:
            data = resp.data or b""
        except _transport_errors():
            data = b""
        finally:
            with contextlib.suppress(Exception):
                resp.release_conn()
        if status in _RETRYABLE_STATUS:
            retry_after = parse_retry_after(resp.headers.get("Retry-After"))
            raise _Transient(f"{status} {raw.reason or _REASONS.get(status, '')}".strip(), retry_after)
        raise map_status_error(status, str(raw.reason or ""), data, target)

    def _wait_seconds(self, retry_state: Any) -> float:
        policy = self.retry_policy
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return min(exc.retry_after, policy.max_retry_after)
        n = max(0, retry_state.attempt_number - 1)
        backoff = min(policy.max_backoff, policy.initial_backoff * (2**n))
        return float(backoff * (1 + policy.jitter * self._rng.random()))

    def _execute(
        self,
        method: str,
        path: str,
        target: Target,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        stream: bool = False,
        timeout: float | tuple[float, float] | None = None,
        cancel: threading.Event | None = None,
    ) -> Any:
        """``cancel`` (a prefetch whose caller went away): once set, no further retry is tried."""
        import tenacity

        self._record(target)
        policy = self.retry_policy

        def should_stop(rs: Any) -> bool:
            return bool(
                rs.attempt_number >= policy.attempts
                or rs.idle_for + rs.upcoming_sleep > policy.budget
                or (cancel is not None and cancel.is_set())
            )

        def count_retry(rs: Any) -> None:
            with self._lock:
                self.stats.retries += 1

        retrying = tenacity.Retrying(
            stop=should_stop,
            wait=self._wait_seconds,
            retry=tenacity.retry_if_exception_type(_Transient),
            sleep=self.sleep,
            before_sleep=count_retry,
            reraise=True,
        )
        attempts = 0
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    return self._send_once(method, path, query, body, content_type, target, stream, timeout)
        except _Transient as exc:
            raise ApiUnreachable(
                MSG_UNREACHABLE.format(method=method, path=path, cause=exc, attempts=attempts),
                verb=target.verb,
                group=target.group,
                resource=target.resource,
                namespace=target.namespace,
                name=target.name,
            ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def request(
        self,
        method: str,
        path: str,
        target: Target,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | tuple[float, float] | None = None,
    ) -> Response:
        """Send one request (retried per :class:`RetryPolicy`) and return the buffered response."""
        result: Response = self._execute(
            method, path, target, query=query, body=body, content_type=content_type, timeout=timeout
        )
        return result

    def stream(
        self,
        path: str,
        target: Target,
        *,
        query: Query | None = None,
        timeout: float | tuple[float, float] | None = None,
    ) -> Stream:
        """Open a streaming GET (watch, ``follow=true`` logs). Connection setup is retried."""
        with self._lock:
            self.stats.watch_streams += 1
        return Stream(self._execute("GET", path, target, query=query, stream=True, timeout=timeout))

    # -- resolution and discovery ------------------------------------------------------------------
    def api_resources(self, group_version: str) -> list[JSON]:
        """The ``resources`` of ``/api/v1`` or ``/apis/{group}/{version}`` (cached); [] if not served."""
        with self._lock:
            cached = self._discovery.get(group_version)
        if cached is not None:
            return cached
        path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        try:
            body = self.request("GET", path, Target("get", "", path)).json() or {}
        except NotFound:
            return []
        resources = list(body.get("resources") or [])
        with self._lock:
            self._discovery[group_version] = resources
        return resources

    def preferred_group_versions(self) -> _List[str]:
        """``group/version`` of each named API group's preferred version (``GET /apis``)."""
        body = self.request("GET", "/apis", Target("get", "", "/apis")).json() or {}
        found: _List[str] = []
        for group in body.get("groups") or []:
            version = ((group or {}).get("preferredVersion") or {}).get("groupVersion")
            if version:
                found.append(str(version))
        return found

    def forget_discovery(self) -> None:
        """Drop cached discovery (after installing a CRD)."""
        with self._lock:
            self._discovery.clear()

    def has_resource(self, group: str, version: str, plural: str) -> bool:
        """Whether the server serves ``plural`` in ``group/version`` (discovery)."""
        gv = f"{group}/{version}" if group else version
        return any(r.get("name") == plural for r in self.api_resources(gv))

    def resolve(self, api_version: str, kind_or_plural: str) -> ResourceType:
        """Map ``(apiVersion, Kind or plural)`` to its REST resource: built-in table, then discovery."""
        known = lookup_builtin(api_version, kind_or_plural)
        if known is not None:
            return known
        group, version = split_api_version(api_version)
        wanted = kind_or_plural.lower()
        for res in self.api_resources(api_version):
            name = str(res.get("name", ""))
            if "/" in name:
                continue
            names = {name, str(res.get("kind", "")).lower(), str(res.get("singularName", ""))}
            names |= {str(s) for s in res.get("shortNames") or []}
            if wanted in names:
                return ResourceType(
                    group, version, name, str(res.get("kind", "")), bool(res.get("namespaced"))
                )
        raise NotFound(
            f"the server does not serve {kind_or_plural!r} in {api_version} (discovery)",
            status=404,
            reason="Not Found",
            verb="get",
            group=group,
            resource=kind_or_plural,
        )

    # -- reads ---------------------------------------------------------------------------------------
    def server_version(self) -> JSON:
        """``GET /version``: ``{"major": "1", "minor": "33", "gitVersion": "v1.33.1", ...}``."""
        body: JSON = self.request("GET", "/version", Target("get", "", "/version")).json() or {}
        return body

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> JSON:
        """One object; raises :class:`NotFound`."""
        rt = self.resolve(api_version, kind)
        target = Target("get", rt.group, rt.plural, namespace if rt.namespaced else None, name)
        obj: JSON = self.request("GET", rt.path(namespace, name), target).json()
        return obj

    def get_or_none(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> JSON | None:
        try:
            return self.get(api_version, kind, name, namespace)
        except NotFound:
            return None

    def list_pages(
        self,
        api_version: str,
        kind_or_plural: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> Iterator[JSON]:
        """Yield each ``XList`` page (``limit`` + ``continue``), items stamped with apiVersion/kind.

        With :attr:`prefetch_pages`, the request for page N+1 (only when page N carries a
        ``continue`` token) runs on a background thread while the caller decodes and works on
        page N: the token is read from the top-level ``metadata`` that the API server writes
        before ``items``, so the server prepares the next page while this process parses the
        current one (when ``items`` comes first the request starts after the parse). The
        requests and their order are the same as without it: each one still needs the previous
        page's token. An error fetching page N+1 is raised when the caller asks for page N+1,
        not before. Closing the generator early (``close()``, garbage collection, an exception
        in the caller) waits for the one in-flight request, tries no retry after it, and
        discards its response; at most one response is held beyond the caller's page.
        """
        if page_size <= 0:
            raise ValueError("page_size must be positive: lists are always paginated")
        rt = self.resolve(api_version, kind_or_plural)
        ns = namespace if rt.namespaced else None
        target = Target("list", rt.group, rt.plural, ns)
        path = rt.path(ns)
        cancel = threading.Event()

        def fetch(token: str | None) -> Response:
            while True:
                query: list[tuple[str, str | int | bool]] = [("limit", page_size)]
                if label_selector:
                    query.append(("labelSelector", label_selector))
                if field_selector:
                    query.append(("fieldSelector", field_selector))
                if token:
                    query.append(("continue", token))
                try:
                    response: Response = self._execute("GET", path, target, query=query, cancel=cancel)
                    return response
                except Gone as exc:
                    # An expired continue token: the server may hand out an inconsistent one to go on with.
                    retry_token = _continue_from_status(exc.body)
                    if not token or not retry_token or cancel.is_set():
                        raise
                    token = retry_token

        pending: _Prefetch | None = None
        try:
            response = fetch(None)
            while True:
                early = _peek_continue(response.data) if self.prefetch_pages else None
                if early:
                    pending = _Prefetch(fetch, early)
                page: JSON = response.json() or {}
                del response
                token = (page.get("metadata") or {}).get("continue") or None
                if pending is not None and token != early:  # pragma: no cover - duplicate keys
                    pending.discard()
                    pending = None
                if token and pending is None and self.prefetch_pages:
                    pending = _Prefetch(fetch, token)
                for item in page.get("items") or []:
                    item.setdefault("apiVersion", rt.api_version)
                    item.setdefault("kind", rt.kind)
                with self._lock:
                    self.stats.pages += 1
                yield page
                if not token:
                    return
                if pending is None:
                    response = fetch(token)
                else:
                    prefetched, pending = pending, None
                    response = prefetched.result()
        finally:
            cancel.set()
            if pending is not None:
                pending.discard()

    def list(
        self,
        api_version: str,
        kind_or_plural: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> Iterator[JSON]:
        """Every matching object, fetched page by page (never one unbounded request)."""
        for page in self.list_pages(
            api_version, kind_or_plural, namespace, label_selector, field_selector, page_size
        ):
            yield from page.get("items") or []

    def list_with_version(
        self,
        api_version: str,
        kind_or_plural: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[_List[JSON], str]:
        """All matching objects plus the list's ``resourceVersion`` (the point to start a watch from)."""
        items: _List[JSON] = []
        version = ""
        for page in self.list_pages(
            api_version, kind_or_plural, namespace, label_selector, field_selector, page_size
        ):
            items.extend(page.get("items") or [])
            version = str((page.get("metadata") or {}).get("resourceVersion") or version)
        return items, version

    def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        """A ConfigMap's ``data`` (empty dict when it has none)."""
        cm = self.get("v1", "ConfigMap", name, namespace)
        return {str(k): str(v) for k, v in (cm.get("data") or {}).items()}

    # -- writes --------------------------------------------------------------------------------------
    def _object_target(self, obj: Mapping[str, Any]) -> tuple[ResourceType, str | None, str | None]:
        api_version = str(obj.get("apiVersion") or "")
        kind = str(obj.get("kind") or "")
        if not api_version or not kind:
            raise ValueError("object needs apiVersion and kind")
        rt = self.resolve(api_version, kind)
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") if rt.namespaced else None
        if rt.namespaced and not ns:
            raise ValueError(f"{kind} {meta.get('name', '')!r} is namespaced: set metadata.namespace")
        return rt, ns, meta.get("name")

    def create(self, obj: Mapping[str, Any]) -> JSON:
        """``POST`` the object (201). A create retried after a lost response that finds its own
        object already there (same ``aicr.run/run-id``) returns that object instead of 409."""
        rt, ns, name = self._object_target(obj)
        target = Target("create", rt.group, rt.plural, ns, name)
        retries_before = self.stats.retries
        try:
            created: JSON = self.request("POST", rt.path(ns), target, body=dict(obj)).json()
        except Conflict:
            run_id = ((obj.get("metadata") or {}).get("labels") or {}).get(RUN_ID_LABEL)
            if self.stats.retries == retries_before or not name or not run_id:
                raise
            existing = self.get_or_none(rt.api_version, rt.kind, name, ns)
            if (
                existing is None
                or ((existing.get("metadata") or {}).get("labels") or {}).get(RUN_ID_LABEL) != run_id
            ):
                raise
            return existing
        return created

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> JSON:
        """``PATCH`` with ``merge`` (RFC 7386), ``strategic``, ``json`` (RFC 6902) or ``apply`` (SSA)."""
        if patch_type not in _PATCH_TYPES:
            raise ValueError(f"patch_type must be one of {sorted(_PATCH_TYPES)}")
        rt = self.resolve(api_version, kind)
        ns = namespace if rt.namespaced else None
        target = Target("patch", rt.group, rt.rbac_resource(subresource), ns, name)
        query: list[tuple[str, str | int | bool]] = []
        if patch_type == "apply":
            query = [("fieldManager", FIELD_MANAGER), ("force", True)]
        out: JSON = self.request(
            "PATCH",
            rt.path(ns, name, subresource),
            target,
            query=query,
            body=patch,
            content_type=_PATCH_TYPES[patch_type],
        ).json()
        return out

    def apply(self, obj: Mapping[str, Any]) -> JSON:
        """Server-side apply (field manager ``aicr-pytest``, force)."""
        rt, ns, name = self._object_target(obj)
        if not name:
            raise ValueError("server-side apply needs metadata.name")
        return self.patch(rt.api_version, rt.kind, name, dict(obj), ns, patch_type="apply")

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        propagation: str = "Foreground",
        grace_period_seconds: int | None = None,
        missing_ok: bool = False,
        preconditions: Mapping[str, str] | None = None,
    ) -> JSON | None:
        """``DELETE`` with ``propagationPolicy`` (Foreground by default); returns the response body.

        ``preconditions`` (``{"uid": ...}`` and/or ``{"resourceVersion": ...}``) make the server refuse
        (409 :class:`Conflict`) to delete an object that is not the one the caller means.
        """
        rt = self.resolve(api_version, kind)
        ns = namespace if rt.namespaced else None
        body: JSON = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            body["preconditions"] = dict(preconditions)
        try:
            out: JSON | None = self.request(
                "DELETE", rt.path(ns, name), Target("delete", rt.group, rt.plural, ns, name), body=body
            ).json()
        except NotFound:
            if missing_ok:
                return None
            raise
        return out

    # -- watch ---------------------------------------------------------------------------------------
    def watch(
        self,
        api_version: str,
        kind_or_plural: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> WatchStream:
        """Open a watch; iterate the returned :class:`WatchStream` for ``{"type", "object"}`` events.

        A 410 (expired ``resourceVersion``), as HTTP status or as an ``ERROR`` event, raises
        :class:`Gone`: re-list and watch again from the new version.
        """
        rt = self.resolve(api_version, kind_or_plural)
        ns = namespace if rt.namespaced else None
        query: list[tuple[str, str | int | bool]] = [
            ("watch", True),
            ("timeoutSeconds", max(1, int(timeout_seconds))),
        ]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", True))
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        target = Target("watch", rt.group, rt.plural, ns)
        read_timeout = float(max(1, int(timeout_seconds))) + 30.0
        stream = self.stream(
            rt.path(ns), target, query=query, timeout=(self.request_timeout[0], read_timeout)
        )
        return WatchStream(stream, rt, target)


def connect(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    retry_policy: RetryPolicy | None = None,
    enforce_declared: bool = False,
    prefetch_pages: bool = PREFETCH_PAGES_DEFAULT,
) -> Cluster:
    """Connect using, in order: ``kubeconfig`` (explicit path), ``$KUBECONFIG``, the in-cluster
    service account, ``~/.kube/config``. Raises :class:`UsageError` naming what was tried."""
    from kubernetes import client as k8s_client

    cfg, source = load_configuration(kubeconfig, context)
    return Cluster(
        k8s_client.ApiClient(cfg),
        sleep=sleep,
        retry_policy=retry_policy,
        enforce_declared=enforce_declared,
        source=source,
        prefetch_pages=prefetch_pages,
    )


__all__ = [
    "FIELD_MANAGER",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "RUN_ID_LABEL",
    "Cluster",
    "Response",
    "RetryPolicy",
    "Stats",
    "Stream",
    "Target",
    "WatchStream",
    "connect",
    "map_status_error",
    "parse_retry_after",
    "streams_in_hand",
]
