"""A scriptable stand-in for ``kubernetes.client.ApiClient`` for pure facade unit tests.

It implements only what :class:`aicr_pytest.kube.client.Cluster` touches (``configuration.host``,
``default_headers``, ``update_params_for_auth``, ``call_api``) and answers from a handler function,
so error mapping, retries and pagination are tested without sockets. End-to-end behaviour is tested
against the fake API server in ``tests/cluster``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from aicr_pytest.kube.client import Cluster, RetryPolicy


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    lines: list[bytes] | None = None  # streaming body (watch / follow)

    def data(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode() if self.body is not None else b""


class _Raw:
    def __init__(self, reply: Reply) -> None:
        self._reply = reply
        self.headers = reply.headers
        self.chunked = False
        self._chunks = list(reply.lines or [])

    @property
    def data(self) -> bytes:
        return self._reply.data()

    def release_conn(self) -> None:
        pass

    def read1(self, amt: int = -1) -> bytes:
        return self._chunks.pop(0) if self._chunks else b""

    def close(self) -> None:
        self._chunks = []

    def shutdown(self) -> None:
        self._chunks = []


class _RestResponse:
    def __init__(self, reply: Reply) -> None:
        self.status = reply.status
        self.reason = reply.reason
        self.response = _Raw(reply)


class _Config:
    host = "https://stub.invalid:6443"


Handler = Callable[[Call], "Reply | BaseException"]


class StubApiClient:
    def __init__(self, handler: Handler) -> None:
        self.configuration = _Config()
        self.default_headers = {"User-Agent": "stub"}
        self.handler = handler
        self.calls: list[Call] = []

    def update_params_for_auth(self, headers: dict[str, str], *args: Any) -> None:
        headers["authorization"] = "Bearer stub"

    def call_api(
        self,
        method: str,
        url: str,
        header_params: dict[str, str] | None = None,
        body: Any = None,
        _request_timeout: Any = None,
    ) -> _RestResponse:
        parts = urlsplit(url)
        call = Call(method, parts.path, dict(parse_qsl(parts.query)), body, dict(header_params or {}))
        self.calls.append(call)
        result = self.handler(call)
        if isinstance(result, BaseException):
            raise result
        return _RestResponse(result)

    def close(self) -> None:
        pass


class Sleeps:
    """Records sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class StepClock:
    """A minimal manual clock: ``sleep`` advances time."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


def make_cluster(
    handler: Handler, *, policy: RetryPolicy | None = None, enforce: bool = True
) -> tuple[Cluster, StubApiClient, Sleeps]:
    api = StubApiClient(handler)
    sleeps = Sleeps()
    cluster = Cluster(api, sleep=sleeps, retry_policy=policy, enforce_declared=enforce)
    return cluster, api, sleeps


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def obj_meta(name: str, namespace: str | None = None, rv: str = "1", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if namespace:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta
