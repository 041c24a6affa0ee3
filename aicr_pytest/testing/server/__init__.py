"""A small Kubernetes API server over real HTTP on 127.0.0.1, backed by :class:`Store`.

Why our own server (stdlib ``http.server.ThreadingHTTPServer``) rather than kmock or aiohttp:

* no new dependencies -- the project already needs the ``kubernetes`` client, pyyaml and the
  standard library, nothing else; kmock drags in aiohttp, attrs, yarl and jsonpatch, and its
  pytest plugin breaks pytest runs without ``pytest-asyncio``;
* the fake is exercised by *synchronous* client code from pytest's thread; a threaded server needs
  no event loop in a side thread and cannot deadlock against a blocking client call;
* kmock's emulator lacked most semantics we need (selectors, uid/resourceVersion, generateName,
  namespaces, 201 on custom-object create, status subresource, logs); subclassing it would have
  meant overriding nearly all of it. The semantics here live in :mod:`aicr_pytest.testing.store`,
  the HTTP layer is routing, serialization, streaming (chunked transfer encoding for watch and
  ``follow``, :mod:`.http`; ``pods/log`` in :mod:`.logs`) and fault injection (:mod:`.faults`).

It serves the REST paths the official python client uses: discovery (``/api``, ``/api/v1``,
``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>``), ``/version``, collection and item
paths for core and named groups (namespaced, cluster-scoped, and all-namespaces lists), the
``status`` subresource, ``pods/log``, ``pods/binding`` and ``pods/eviction``. Players stand in for
what sits behind the API server: Service-proxy backends (:attr:`FakeApiServer.proxy_handlers`, the
path below ``/proxy`` with its query string), aggregated APIs such as ``custom.metrics.k8s.io``
(:attr:`FakeApiServer.aggregated`, an APIService's backend: listed in ``/apis`` and answering
everything below ``/apis/<group>/<version>``) and containers for ``pods/exec`` over WebSocket
(:attr:`FakeApiServer.exec_handlers`, :mod:`.websocket`).

Fault injection (:class:`Faults`): a test scripts "the next N requests matching (method,
path-regex) get 429 with ``Retry-After`` / 500 / a dropped connection / an RBAC 403 / any
``Status`` a test composes (an admission webhook's denial)", and "the
next watch gets a 410 Gone ERROR event". Every request is counted (:meth:`FakeApiServer.request_count`).
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import yaml

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.server.authz import REVIEW_PATH, review_access
from aicr_pytest.testing.server.faults import Fault, Faults
from aicr_pytest.testing.server.http import (
    JSON_CT,
    Response,
    _Handler,
    _HTTPServer,
    _status_error,
    query_int,
)
from aicr_pytest.testing.server.logs import serve_log
from aicr_pytest.testing.server.websocket import ExecHandler, ExecOutcome
from aicr_pytest.testing.store import APPLY_PATCH, ApiError, Obj, Store

if TYPE_CHECKING:
    from aicr_pytest.testing.server.tls import TlsMaterial

__all__ = [
    "AggregatedHandler",
    "ExecHandler",
    "ExecOutcome",
    "FakeApiServer",
    "Fault",
    "Faults",
    "ProxyHandler",
    "RequestRecord",
    "Response",
]

#: ``handler(method, path below /proxy [+ "?" query], request body) -> (HTTP status, body text)``.
ProxyHandler = Callable[[str, str, bytes], tuple[int, str]]
#: ``handler(method, path below /apis/<group>/<version> ("" = discovery), query) -> (status, body)``;
#: a ``dict`` body is sent as JSON.
AggregatedHandler = Callable[[str, str, dict[str, str]], tuple[int, "Obj | str"]]
_PROXY_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/services/([^/]+)/proxy(/.*)?$")
#: ``handler(method, the pod, path below /proxy [+ "?" query], request body) -> (status, body text)``.
PodProxyHandler = Callable[[str, "Obj", str, bytes], tuple[int, str]]
_POD_PROXY_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/proxy(/.*)?$")
_EXEC_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec$")


@dataclass(frozen=True)
class RequestRecord:
    method: str
    path: str
    query: str
    status: int
    watch: bool = False


@dataclass
class _Route:
    rt: ResourceType | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    discovery: Obj | None = None
    text: str | None = None


_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class FakeApiServer:
    """The HTTP front end. Start with :meth:`start`, stop with :meth:`stop`."""

    def __init__(
        self,
        store: Store,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        tls: TlsMaterial | None = None,
    ) -> None:
        self.store = store
        #: HTTPS when set (``simulate``): the CA clients must trust is ``tls.ca_pem``
        self.tls = tls
        self.faults = Faults()
        self.token = token
        self.user = "system:serviceaccount:aicr-validation:aicr-pytest"
        self.counts: Counter[tuple[str, str]] = Counter()
        self.requests: deque[RequestRecord] = deque(maxlen=20_000)
        self._count_lock = threading.Lock()
        self._stopping = threading.Event()
        #: Service proxy (``/api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/...``) backends,
        #: keyed by ``(namespace, service name)``: a player stands in for the pods behind a Service.
        self.proxy_handlers: dict[tuple[str, str], ProxyHandler] = {}
        #: Pod proxy (``/api/v1/namespaces/<ns>/pods/<name>[:<port>]/proxy/...``) backends, by namespace
        self.pod_proxy_handlers: dict[str, PodProxyHandler] = {}
        #: Aggregated API backends keyed by ``(group, version)`` (an ``APIService`` and its server).
        self.aggregated: dict[tuple[str, str], AggregatedHandler] = {}
        #: ``pods/exec`` stand-ins keyed by ``(namespace, pod name)``; pod ``"*"`` serves any pod
        #: of the namespace that has no handler of its own.
        self.exec_handlers: dict[tuple[str, str], ExecHandler] = {}
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.api = self
        if tls is not None:
            self._httpd.tls = tls.server_context()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------------------- lifecycle --
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> FakeApiServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-apiserver",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self.store.cond:
            self.store.cond.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # ----------------------------------------------------------------------------- counters --
    def record(self, method: str, path: str, query: str, status: int, watch: bool) -> None:
        with self._count_lock:
            self.counts[(method, path)] += 1
            self.requests.append(RequestRecord(method, path, query, status, watch))

    def request_count(
        self, method: str | None = None, path: str | None = None, *, watch: bool | None = None
    ) -> int:
        """How many requests matched ``method`` and the ``path`` regex (search) so far."""
        pat = re.compile(path) if path else None
        with self._count_lock:
            return sum(
                1
                for r in self.requests
                if (method is None or r.method == method.upper())
                and (pat is None or pat.search(r.path))
                and (watch is None or r.watch == watch)
            )

    def reset_counts(self) -> None:
        with self._count_lock:
            self.counts.clear()
            self.requests.clear()

    # ------------------------------------------------------------------------------ routing --
    def route(self, path: str) -> _Route:
        parts = [p for p in path.split("/") if p]
        store = self.store
        if parts in (["version"],):
            return _Route(discovery=dict(store.version))
        if parts and parts[0] in ("healthz", "readyz", "livez"):
            return _Route(text="ok")
        if parts == ["api"]:
            return _Route(
                discovery={
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}
                    ],
                }
            )
        if parts == ["apis"]:
            return _Route(
                discovery={
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": [self._group_doc(g, vs) for g, vs in self._all_groups() if g],
                }
            )
        if len(parts) == 2 and parts[0] == "apis":
            for g, vs in self._all_groups():
                if g == parts[1]:
                    doc = self._group_doc(g, vs)
                    doc.update({"kind": "APIGroup", "apiVersion": "v1"})
                    return _Route(discovery=doc)
            raise _status_error(404, "the server could not find the requested resource")
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise _status_error(404, "the server could not find the requested resource")
        if not rest:
            types = store.resources(group, version)
            if not types:
                raise _status_error(404, "the server could not find the requested resource")
            resources: list[Obj] = []
            for rt in sorted(types, key=lambda t: t.plural):
                resources.extend(rt.discovery_entries())
            gv = f"{group}/{version}" if group else version
            return _Route(
                discovery={
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": gv,
                    "resources": resources,
                }
            )
        namespace: str | None = None
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        found = store.resource(group, version, rest[0])
        if found is None or len(rest) > 3:
            raise _status_error(404, "the server could not find the requested resource")
        rt = found
        if namespace is not None and not rt.namespaced:
            raise _status_error(404, "the server could not find the requested resource")
        if namespace is None and rt.namespaced and len(rest) > 1:
            raise _status_error(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rt.subresources:
            raise _status_error(404, "the server could not find the requested resource")
        return _Route(rt=rt, namespace=namespace, name=name, subresource=sub)

    def _all_groups(self) -> list[tuple[str, list[str]]]:
        """The store's groups plus the aggregated ones (an APIService adds its group to ``/apis``)."""
        groups = [(g, list(vs)) for g, vs in self.store.groups()]
        for group, version in sorted(self.aggregated):
            for g, vs in groups:
                if g == group:
                    if version not in vs:
                        vs.append(version)
                    break
            else:
                groups.append((group, [version]))
        return groups

    @staticmethod
    def _group_doc(group: str, versions: list[str]) -> Obj:
        vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": vs, "preferredVersion": vs[0]}

    # ----------------------------------------------------------------------------- dispatch --
    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes, alive: Any
    ) -> Response:
        method = method.upper()
        for pattern, proxy in ((_PROXY_PATH, self._proxy), (_POD_PROXY_PATH, self._pod_proxy)):
            proxied = pattern.match(path)
            if proxied is not None:
                subpath = proxied.group(3) or "/"
                if query:
                    subpath += "?" + urlencode(query)
                return proxy(method, proxied.group(1), proxied.group(2), subpath, raw)
        if method == "POST" and path == REVIEW_PATH:  # RBAC answered from the stored roles (.authz)
            try:
                review = json.loads(raw or b"{}")
            except ValueError as exc:
                raise ApiError.bad_request(f"the request body could not be decoded: {exc}") from exc
            return Response(201, review_access(self.store, review if isinstance(review, dict) else {}))
        aggregated = self._aggregated(method, path, query)
        if aggregated is not None:
            return aggregated
        route = self.route(path)
        if route.text is not None:
            return Response(200, route.text, content_type="text/plain")
        if route.discovery is not None:
            if method != "GET":
                raise _status_error(
                    405, f"the server does not allow this method on the requested resource ({method})"
                )
            return Response(200, route.discovery)
        rt = route.rt
        assert rt is not None
        deny = self.faults.take(method, path, query.get("watch") in ("true", "1"), ("deny",))
        if deny is not None:
            verb = _VERBS.get(method, method.lower())
            if method == "GET" and route.name is None:
                verb = "watch" if query.get("watch") in ("true", "1") else "list"
            if method == "DELETE" and route.name is None:
                verb = "deletecollection"
            resource = rt.plural + (f"/{route.subresource}" if route.subresource else "")
            where = f' in the namespace "{route.namespace}"' if route.namespace else " at the cluster scope"
            named = f' "{route.name}"' if route.name else ""
            raise ApiError(
                403,
                "Forbidden",
                f'{rt.group_resource}{named} is forbidden: User "{self.user}" cannot {verb} resource '
                f'"{resource}" in API group "{rt.group}"{where}',
                {"name": route.name or "", "kind": rt.plural, **({"group": rt.group} if rt.group else {})},
            )
        body: Any = None
        if raw:
            ctype = headers.get("content-type", JSON_CT).split(";")[0].strip().lower()
            try:
                body = yaml.safe_load(raw.decode()) if ctype == APPLY_PATCH else json.loads(raw)
            except (ValueError, yaml.YAMLError) as exc:
                raise ApiError.bad_request(f"the request body could not be decoded: {exc}") from exc
        if route.name is None:
            return self._collection(method, route, rt, query, body, alive)
        return self._item(method, route, rt, query, headers, body, alive)

    def _collection(
        self, method: str, route: _Route, rt: ResourceType, q: dict[str, str], body: Any, alive: Any
    ) -> Response:
        store = self.store
        if method == "GET":
            if q.get("watch") in ("true", "1"):
                return self._watch(route, rt, q, alive)
            limit = query_int(q.get("limit"), "limit")
            return Response(
                200,
                store.list(
                    rt,
                    route.namespace,
                    label_selector=q.get("labelSelector"),
                    field_selector=q.get("fieldSelector"),
                    limit=limit or 0,
                    continue_token=q.get("continue"),
                ),
            )
        if method == "POST":
            if route.namespace is None and rt.namespaced:
                raise _status_error(405, "the server does not allow this method on the requested resource")
            created = store.create(rt, route.namespace, body, dry_run=bool(q.get("dryRun")))
            return Response(201, created)
        if method == "DELETE":
            return Response(
                200,
                store.delete_collection(
                    rt,
                    route.namespace,
                    label_selector=q.get("labelSelector"),
                    field_selector=q.get("fieldSelector"),
                    options=_delete_options(q, body),
                ),
            )
        raise _status_error(405, "the server does not allow this method on the requested resource")

    def _item(
        self,
        method: str,
        route: _Route,
        rt: ResourceType,
        q: dict[str, str],
        headers: dict[str, str],
        body: Any,
        alive: Any,
    ) -> Response:
        store = self.store
        ns, name, sub = route.namespace, route.name, route.subresource
        assert name is not None
        if sub == "log":
            if method != "GET":
                raise _status_error(405, "the server does not allow this method on the requested resource")
            return serve_log(self.store, ns or "default", name, q, alive, lambda: self.stopping)
        if sub == "binding":
            return self._bind(rt, ns, name, body)
        if sub == "eviction":
            store.delete(rt, ns, name, (body or {}).get("deleteOptions"))
            return Response(
                201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            )
        if sub not in (None, "status"):
            raise _status_error(405, "the server does not allow this method on the requested resource")
        if method == "GET":
            return Response(200, store.get(rt, ns, name))
        if method == "PUT":
            return Response(200, store.update(rt, ns, name, body, subresource=sub))
        if method == "PATCH":
            obj, created = store.patch(
                rt,
                ns,
                name,
                body,
                headers.get("content-type", JSON_CT),
                subresource=sub,
                field_manager=q.get("fieldManager"),
            )
            return Response(201 if created else 200, obj)
        if method == "DELETE" and sub is None:
            code, out = store.delete(rt, ns, name, _delete_options(q, body))
            headers_out: dict[str, str] = {}
            if (
                rt.group == "batch"
                and rt.plural == "jobs"
                and not _delete_options(q, body).get("propagationPolicy")
            ):
                headers_out["Warning"] = (
                    '299 - "child pods are preserved by default when jobs are deleted; set '
                    "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to "
                    'suppress this warning"'
                )
            return Response(code, out, headers=headers_out)
        raise _status_error(405, "the server does not allow this method on the requested resource")

    def _proxy(self, method: str, ns: str, target: str, subpath: str, raw: bytes) -> Response:
        """The API server's service proxy: 404 without the Service, 503 without a backend."""
        parts = target.split(":")
        name = parts[1] if len(parts) == 3 else parts[0]  # [scheme:]name[:port]
        services = self.store.resource("", "v1", "services")
        assert services is not None
        self.store.get(services, ns, name)  # 404 NotFound when the Service does not exist
        handler = self.proxy_handlers.get((ns, name))
        if handler is None:
            raise _status_error(503, f'no endpoints available for service "{name}"')
        status, text = handler(method, subpath, raw)
        return Response(status, text)

    def _pod_proxy(self, method: str, ns: str, target: str, subpath: str, raw: bytes) -> Response:
        """The API server's pod proxy: 404 without the pod, 503 unless it runs and a backend answers."""
        parts = target.split(":")
        name = parts[1] if len(parts) == 3 else parts[0]  # [scheme:]name[:port]
        pods = self.store.resource("", "v1", "pods")
        assert pods is not None
        pod = self.store.get(pods, ns, name)  # 404 NotFound when the pod does not exist
        handler = self.pod_proxy_handlers.get(ns)
        if handler is None or (pod.get("status") or {}).get("phase") != "Running":
            raise _status_error(503, f'error trying to reach service: pod "{name}" is not serving')
        status, text = handler(method, pod, subpath, raw)
        return Response(status, text)

    def _aggregated(self, method: str, path: str, query: dict[str, str]) -> Response | None:
        """An aggregated API's answer for ``path`` (``None``: not an aggregated group/version)."""
        parts = [p for p in path.split("/") if p]
        if len(parts) < 3 or parts[0] != "apis":
            return None
        handler = self.aggregated.get((parts[1], parts[2]))
        if handler is None:
            return None
        rest = "/" + "/".join(parts[3:]) if len(parts) > 3 else ""
        status, body = handler(method, rest, query)
        if isinstance(body, str):
            return Response(status, body, content_type="text/plain" if status < 400 else JSON_CT)
        return Response(status, body)

    def exec_pod(self, path: str, query: dict[str, list[str]]) -> ExecOutcome:
        """``pods/exec``: the pod and container must exist and the container run; a player's
        :data:`ExecHandler` plays the command (``ApiError`` before the upgrade otherwise)."""
        found = _EXEC_PATH.match(path)
        if found is None:
            raise _status_error(404, "the server could not find the requested resource")
        ns, name = found.group(1), found.group(2)
        if self.faults.take("GET", path, False, ("deny",)) is not None:
            raise ApiError(
                403,
                "Forbidden",
                f'pods "{name}" is forbidden: User "{self.user}" cannot create resource "pods/exec" in API '
                f'group "" in the namespace "{ns}"',
                {"name": name, "kind": "pods"},
            )
        pods = self.store.resource("", "v1", "pods")
        assert pods is not None
        pod = self.store.get(pods, ns, name)
        containers = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
        container = (query.get("container") or [""])[-1] or (containers[0] if len(containers) == 1 else "")
        if container not in containers:
            raise ApiError.bad_request(f"container {container} is not valid for pod {name}")
        command = list(query.get("command") or [])
        if not command:
            raise ApiError.bad_request("you must specify at least 1 command")
        if (pod.get("status") or {}).get("phase") != "Running":
            raise ApiError.bad_request(f'unable to upgrade connection: container not found ("{container}")')
        handler = self.exec_handlers.get((ns, name)) or self.exec_handlers.get((ns, "*"))
        if handler is None:
            return ExecOutcome(
                exit_code=None, error=f"exec is not simulated for pod {ns}/{name}: {command[0]}: not found"
            )
        return handler(container, command)

    def _bind(self, rt: ResourceType, ns: str | None, name: str, body: Any) -> Response:
        target = ((body or {}).get("target") or {}).get("name")
        if not target:
            raise ApiError.invalid(rt, name, "target.name", "Required value")
        pod = self.store.get(rt, ns, name)
        if (pod.get("spec") or {}).get("nodeName"):
            raise ApiError.conflict(
                rt, name, f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"'
            )

        def bind(obj: Obj) -> None:
            obj["spec"]["nodeName"] = target

        self.store.mutate(rt, ns, name, bind)
        return Response(
            201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        )

    # ------------------------------------------------------------------------------- watch --
    def _watch(self, route: _Route, rt: ResourceType, q: dict[str, str], alive: Any) -> Response:
        path_fault = self.faults.take("GET", _watch_path(route, rt), True, ("expire-watch",))
        timeout = query_int(q.get("timeoutSeconds"), "timeoutSeconds")
        if path_fault is not None:
            rv = q.get("resourceVersion") or str(self.store.resource_version)
            event = {
                "type": "ERROR",
                "object": ApiError.gone(
                    f"too old resource version: {rv} ({self.store.resource_version})"
                ).status(),
            }
            return Response(200, stream=iter([json.dumps(event).encode() + b"\n"]))
        events = self.store.watch(
            rt,
            route.namespace,
            label_selector=q.get("labelSelector"),
            field_selector=q.get("fieldSelector"),
            resource_version=q.get("resourceVersion"),
            timeout_seconds=float(timeout) if timeout else None,
            stopped=lambda: self.stopping or not alive(),
        )
        first = next(events, None)  # surfaces 400s (bad selectors) before the 200 goes out

        def gen() -> Iterator[bytes]:
            if first is not None:
                yield json.dumps(first, separators=(",", ":")).encode() + b"\n"
                for ev in events:
                    yield json.dumps(ev, separators=(",", ":")).encode() + b"\n"

        return Response(200, stream=gen())


def _watch_path(route: _Route, rt: ResourceType) -> str:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else "/api/v1"
    return prefix + (f"/namespaces/{route.namespace}" if route.namespace else "") + f"/{rt.plural}"


def _delete_options(q: dict[str, str], body: Any) -> Obj:
    opts: Obj = dict(body) if isinstance(body, dict) else {}
    if "propagationPolicy" in q:
        opts.setdefault("propagationPolicy", q["propagationPolicy"])
    if "orphanDependents" in q:
        opts.setdefault("orphanDependents", q["orphanDependents"] == "true")
    if "dryRun" in q:
        opts.setdefault("dryRun", [q["dryRun"]])
    return opts
