"""Scripted HTTP failures of the fake API server: 429/5xx, dropped connections, 403s, webhook denials,
``410 Gone`` on watch."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Fault:
    """One scripted failure; ``remaining=None`` means "every matching request"."""

    action: str  # "status" | "drop" | "expire-watch" | "deny"
    method: str | None
    path: re.Pattern[str]
    remaining: int | None
    status: int = 500
    retry_after: int | None = None
    message: str = ""
    watch: bool | None = None
    reason: str | None = None  #: the ``Status`` reason (default: derived from ``status``)
    #: builds the ``Status`` message from the request body (``reject`` with a callable message)
    respond: Callable[[bytes], str] | None = None
    #: only requests whose body satisfies this (e.g. a webhook that judges the object)
    when: Callable[[bytes], bool] | None = None
    hits: int = 0

    def matches(self, method: str, path: str, is_watch: bool, body: bytes = b"") -> bool:
        if self.remaining is not None and self.remaining <= 0:
            return False
        if self.when is not None and not self.when(body):
            return False
        if self.method and self.method.upper() != method.upper():
            return False
        if self.watch is not None and self.watch != is_watch:
            return False
        return bool(self.path.search(path))

    def consume(self) -> None:
        self.hits += 1
        if self.remaining is not None:
            self.remaining -= 1


class Faults:
    """Scripted failures for the fake API server (see each method)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def _add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def throttle(
        self, method: str | None = None, path: str = ".*", *, times: int | None = 1, retry_after: int = 1
    ) -> Fault:
        """Answer 429 TooManyRequests with ``Retry-After: <retry_after>`` (API priority and fairness)."""
        return self._add(
            Fault("status", method, re.compile(path), times, status=429, retry_after=retry_after, watch=None)
        )

    def server_error(
        self, method: str | None = None, path: str = ".*", *, times: int | None = 1, status: int = 500
    ) -> Fault:
        """Answer with a 5xx ``Status`` (InternalError for 500, ServiceUnavailable for 503)."""
        return self._add(Fault("status", method, re.compile(path), times, status=status))

    def drop_connection(self, method: str | None = None, path: str = ".*", *, times: int | None = 1) -> Fault:
        """Close the TCP connection without answering (the client sees a connection reset)."""
        return self._add(Fault("drop", method, re.compile(path), times))

    def expire_watch(self, path: str = ".*", *, times: int | None = 1) -> Fault:
        """The next matching watch streams one ``ERROR`` event with a 410 Gone ``Status`` and ends."""
        return self._add(Fault("expire-watch", "GET", re.compile(path), times, status=410, watch=True))

    def deny(self, method: str | None = None, path: str = ".*", *, times: int | None = None) -> Fault:
        """Answer 403 Forbidden with an RBAC-style message naming the verb and resource."""
        return self._add(Fault("deny", method, re.compile(path), times, status=403))

    def reject(
        self,
        method: str | None = None,
        path: str = ".*",
        *,
        status: int = 422,
        reason: str | None = None,
        message: str | Callable[[bytes], str] = "",
        times: int | None = 1,
        when: Callable[[bytes], bool] | None = None,
    ) -> Fault:
        """Refuse the request with any failure ``Status``, as an admission webhook's denial or a
        validation error reaches the client: ``message`` is the text, or a function of the request
        body (e.g. naming the object the webhook judged); ``reason`` defaults from ``status``;
        ``when`` (a predicate over the request body) limits it to the objects a webhook would deny."""
        fault = Fault("status", method, re.compile(path), times, status=status, reason=reason, when=when)
        if callable(message):
            fault.respond = message
        else:
            fault.message = message
        return self._add(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(
        self, method: str, path: str, is_watch: bool, actions: tuple[str, ...], body: bytes = b""
    ) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.action in actions and fault.matches(method, path, is_watch, body):
                    fault.consume()
                    return fault
        return None
