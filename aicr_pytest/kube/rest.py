"""The one request path to a Kubernetes API server, and discovery: :class:`RestClient`.

Every request goes through :meth:`RestClient.request` / :meth:`RestClient.stream`, which record the
RBAC :class:`~aicr_pytest.kube.rbac.Permission` the request needs, retry transient failures (429
honouring ``Retry-After``, 5xx, dropped or refused connections) with tenacity, bounded by attempts and
a total sleep budget, then raise :class:`~aicr_pytest.kube.errors.ApiUnreachable`, and map any other
error status to its exception (:func:`~aicr_pytest.kube.transport.map_status_error`).  Discovery
(``/api``, ``/apis``) is cached per group version.

The resource verbs (get, list, create, patch, delete, watch) are
:class:`~aicr_pytest.kube.client.Cluster`'s.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Self
from urllib.parse import quote, urlencode

from aicr_pytest.kube.errors import MSG_UNREACHABLE, ApiUnreachable, ClusterUnreachable, NotFound
from aicr_pytest.kube.rbac import (
    DECLARED_PERMISSIONS,
    Permission,
    PermissionRecorder,
    UndeclaredPermission,
    non_resource_pattern,
)
from aicr_pytest.kube.reach import Where
from aicr_pytest.kube.resources import ResourceType, lookup_builtin, split_api_version
from aicr_pytest.kube.streams import Stream
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

__all__ = ["PREFETCH_PAGES_DEFAULT", "RestClient"]

_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
#: Whether a client prefetches the next list page by default (see :meth:`Cluster.list_pages`).
PREFETCH_PAGES_DEFAULT = True
#: how long to wait for a connection to the API server
CONNECT_TIMEOUT_S = 10.0
#: how long an ordinary request may wait for its answer: a server that goes silent with a request in
#: flight is probed (and the run ends) after this, not after a minute. Log follows and watches pass
#: their own, longer bounds; lists are paginated, so no ordinary answer takes near this long.
READ_TIMEOUT_S = 20.0


class RestClient:
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
        request_timeout: tuple[float, float] = (CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
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
        #: the reachability check (:mod:`~aicr_pytest.kube.reach`): set by whoever connects with a
        #: reach bound; returns the :class:`ClusterUnreachable` to raise, or ``None`` when reachable
        self.reach_check: Callable[[], ClusterUnreachable | None] | None = None
        #: the circuit breaker: once the cluster was found unreachable every request raises this
        self.tripped: ClusterUnreachable | None = None
        #: called once with the one line when the breaker trips (a run cuts its running check short)
        self.on_trip: Callable[[str], None] | None = None
        #: the kubeconfig entries this client came from (server, context, cluster, user)
        self.where: Where | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return str(self.api_client.configuration.host)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api_client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def retry_count(self) -> int:
        return self.stats.retries

    @property
    def request_count(self) -> int:
        return self.stats.requests

    # -- the circuit breaker -------------------------------------------------------------------
    def check_reach(self) -> ClusterUnreachable | None:
        """Probe the server (when a reach check is set); unreachable trips the breaker."""
        if self.tripped is not None:
            return self.tripped
        if self.reach_check is None:
            return None
        verdict = self.reach_check()
        if verdict is not None:
            with self._lock:
                first = self.tripped is None
                self.tripped = self.tripped or verdict
            if first and self.on_trip is not None:
                self.on_trip(str(verdict))
        return self.tripped

    # -- the one request path ------------------------------------------------------------------
    def _record(self, target: Target) -> None:
        perm = target.permission
        if perm.is_non_resource_url:
            perm = Permission(perm.verb, "", non_resource_pattern(perm.resource))
        self.permissions.record(perm)
        if self.enforce_declared and perm not in DECLARED_PERMISSIONS:
            raise UndeclaredPermission(
                f"request needs `{perm}`, which aicr_pytest.kube.rbac.DECLARED_PERMISSIONS "
                "(deploy/rbac.yaml, deploy/rbac-node-marks.yaml) does not declare"
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
            # a transport-level failure: is the server there at all? (then no retry budget is spent)
            tripped = self.check_reach()
            if tripped is not None:
                raise tripped from exc
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            # The client wraps TLS errors as ApiException(status=0): not transient, not ours to hide.
            status = getattr(exc, "status", None)
            if status == 0:
                tripped = self.check_reach()
                if tripped is not None:
                    raise tripped from exc
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

        if self.tripped is not None:
            raise ClusterUnreachable(str(self.tripped), reach=self.tripped.reach)
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
            tripped = self.check_reach()  # every retry failed: still there?
            if tripped is not None:
                raise tripped from exc
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

    def preferred_group_versions(self) -> list[str]:
        """``group/version`` of each named API group's preferred version (``GET /apis``)."""
        body = self.request("GET", "/apis", Target("get", "", "/apis")).json() or {}
        found: list[str] = []
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
