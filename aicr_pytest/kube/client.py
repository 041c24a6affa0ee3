"""The cluster facade: one REST helper over the official ``kubernetes`` client's transport.

:func:`connect` builds a :class:`Cluster` from a kubeconfig (or in-cluster service account, see
:mod:`.kubeconfig`).  Every request — core, batch, RBAC, DRA, custom resources, discovery, logs,
watches — goes through :meth:`Cluster.request` / :meth:`Cluster.stream` (inherited from
:class:`~aicr_pytest.kube.rest.RestClient`, the request path and discovery), which

* builds the REST path from a :class:`~aicr_pytest.kube.resources.ResourceType`,
* records the RBAC :class:`~aicr_pytest.kube.rbac.Permission` it needs,
* retries transient failures (429 honouring ``Retry-After``, 5xx, dropped or refused connections)
  with tenacity, bounded by attempts and a total sleep budget, then raises :class:`ApiUnreachable`,
* maps 401/403 to :class:`AccessDenied` (never retried), 404 to :class:`NotFound`, 409 to
  :class:`Conflict`, 410 to :class:`Gone`, 400/422 to :class:`Invalid`
  (:func:`~aicr_pytest.kube.transport.map_status_error`),
* parses JSON with :func:`json.loads` into plain dicts (no model deserialization: a 50,000-pod list
  stays fast and small).

Around :class:`Cluster`: :mod:`.rest` (the request path and discovery), :mod:`.transport` (what a
request is, retry bounds, the status → exception mapping), :mod:`.streams` (streaming responses and
decoded watch events), :mod:`.paging` (the next list page fetched while the caller works on the
current one), :mod:`.kubeconfig` (where the connection comes from).  The names callers use are
importable from here.

The ``kubernetes`` package is imported lazily, inside :func:`connect` and the transport calls, so
``import aicr_pytest.kube`` costs nothing in ``--no-cluster`` runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from aicr_pytest.kube.errors import Conflict, Gone, NotFound
from aicr_pytest.kube.kubeconfig import load_target
from aicr_pytest.kube.kubeconfigs import DEFAULT_EXEC_TIMEOUT_S
from aicr_pytest.kube.paging import _continue_from_status, _peek_continue, _Prefetch
from aicr_pytest.kube.reach import reach_checker
from aicr_pytest.kube.resources import ResourceType
from aicr_pytest.kube.rest import PREFETCH_PAGES_DEFAULT, RestClient
from aicr_pytest.kube.streams import Stream, WatchStream, streams_in_hand
from aicr_pytest.kube.transport import (
    JSON,
    Response,
    RetryPolicy,
    Stats,
    Target,
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


class Cluster(RestClient):
    """A connection to one Kubernetes API server: the resource verbs over :class:`RestClient`'s
    request path and discovery; every method returns plain dicts."""

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

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> JSON:
        """``POST`` the object (201). A create retried after a lost response that finds its own
        object already there (same ``aicr.run/run-id``) returns that object instead of 409.
        ``dry_run``: the server checks everything (namespace, admission, RBAC) and stores nothing."""
        rt, ns, name = self._object_target(obj)
        target = Target("create", rt.group, rt.plural, ns, name)
        retries_before = self.stats.retries
        query: list[tuple[str, str | int | bool]] = [("dryRun", "All")] if dry_run else []
        try:
            created: JSON = self.request("POST", rt.path(ns), target, query=query, body=dict(obj)).json()
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
    reach_timeout: float | None = None,
) -> Cluster:
    """Connect using, in order: ``kubeconfig`` (explicit path), ``$KUBECONFIG``, the in-cluster
    service account, ``~/.kube/config``. Raises :class:`UsageError` naming what was tried.

    With ``reach_timeout`` the server is probed at once (:mod:`~aicr_pytest.kube.reach`), and again
    when a request fails at the transport level or exhausts its retries: an unreachable verdict
    trips :attr:`Cluster.tripped`, and every request from then on raises it at once (the caller
    reads ``tripped`` to print its one line)."""
    from kubernetes import client as k8s_client

    exec_timeout = max(DEFAULT_EXEC_TIMEOUT_S, 2 * reach_timeout) if reach_timeout else DEFAULT_EXEC_TIMEOUT_S
    cfg, source, where = load_target(kubeconfig, context, exec_timeout=exec_timeout)
    cluster = Cluster(
        k8s_client.ApiClient(cfg),
        sleep=sleep,
        retry_policy=retry_policy,
        enforce_declared=enforce_declared,
        source=source,
        prefetch_pages=prefetch_pages,
    )
    cluster.where = where
    if reach_timeout:
        cluster.reach_check = reach_checker(cluster.api_client, where, reach_timeout)
        cluster.check_reach()
    return cluster


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
