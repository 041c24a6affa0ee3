"""What one facade request is, how far it is retried, and how a failed one reads.

:class:`Target` (what a request addresses: verb, resource, namespace, name — for RBAC and
messages), :class:`RetryPolicy` (attempts, backoff, total sleep budget, ``Retry-After`` cap),
:class:`Response`, :func:`parse_retry_after` and :func:`map_status_error` (a non-2xx status →
the facade's exception types, with the admission-vs-RBAC distinction for 403).  The request
loop itself is :meth:`aicr_pytest.kube.client.Cluster.request`.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.kube.errors import (
    MSG_ACCESS_DENIED,
    MSG_ADMISSION_DENIED,
    AccessDenied,
    AdmissionDenied,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
)
from aicr_pytest.kube.rbac import Permission

JSON = dict[str, Any]
Query = Sequence[tuple[str, str | int | bool]]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds for transient-failure retries.

    ``attempts`` counts the first try; ``budget`` caps the total time slept across retries;
    a server's ``Retry-After`` is honoured up to ``max_retry_after`` seconds.
    """

    attempts: int = 5
    initial_backoff: float = 0.25
    max_backoff: float = 4.0
    budget: float = 30.0
    max_retry_after: float = 10.0
    jitter: float = 0.1


@dataclass
class Stats:
    """Observable counters (tests and benchmarks read them)."""

    requests: int = 0
    retries: int = 0
    pages: int = 0
    watch_streams: int = 0
    by_verb: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Target:
    """What a request addresses, for permissions and error messages."""

    verb: str
    group: str = ""
    resource: str = ""
    namespace: str | None = None
    name: str | None = None

    @property
    def permission(self) -> Permission:
        return Permission(self.verb, self.group, self.resource)

    def describe(self) -> str:
        """``pods "x" in namespace ns`` / ``jobs.batch in namespace ns`` / ``nodes``."""
        if self.resource.startswith("/"):
            return self.resource
        plural, _, sub = self.resource.partition("/")
        text = plural + (f".{self.group}" if self.group else "") + (f"/{sub}" if sub else "")
        if self.name:
            text += f' "{self.name}"'
        if self.namespace:
            text += f" in namespace {self.namespace}"
        return text


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    data: bytes

    def json(self) -> Any:
        return json.loads(self.data) if self.data else None


class _Transient(Exception):
    """Internal: a retryable failure (carries the server's Retry-After, if any)."""

    def __init__(self, cause: str, retry_after: float | None = None) -> None:
        super().__init__(cause)
        self.retry_after = retry_after


def _transport_errors() -> tuple[type[BaseException], ...]:
    import urllib3.exceptions

    return (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


def _stream_end_errors() -> tuple[type[BaseException], ...]:
    return (*_transport_errors(), ValueError, AttributeError, OSError)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP-date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _status_message(data: bytes) -> str:
    try:
        body = json.loads(data)
    except (ValueError, TypeError):
        return data[:200].decode("utf-8", "replace").strip()
    if isinstance(body, dict):
        return str(body.get("message") or body.get("reason") or "")
    return ""


_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    410: "Gone",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


#: A 403 Status message that comes from admission, not from the RBAC authorizer (whose message reads
#: ``... is forbidden: User "u" cannot <verb> resource "<r>" ...``).
_ADMISSION_DENIAL = re.compile(
    r"admission webhook|denied (?:the )?request|violates PodSecurity|exceeded quota|is being terminated"
)


def map_status_error(status: int, reason: str, data: bytes, target: Target) -> ApiError:
    """Map a non-2xx HTTP status to the facade's exception types (no retry decisions here)."""
    reason = reason or _REASONS.get(status, "")
    detail = _status_message(data)
    common: dict[str, Any] = {
        "status": status,
        "reason": reason,
        "verb": target.verb,
        "group": target.group,
        "resource": target.resource,
        "namespace": target.namespace,
        "name": target.name,
        "body": data[:4096].decode("utf-8", "replace"),
    }
    if status in (401, 403):
        plural, _, sub = target.resource.partition("/")
        what = plural + (f".{target.group}" if target.group else "") + (f"/{sub}" if sub else "")
        if target.name:
            what += f' "{target.name}"'
        where = f" in namespace {target.namespace}" if target.namespace else ""
        if status == 403 and _ADMISSION_DENIAL.search(detail):
            message = MSG_ADMISSION_DENIED.format(
                verb=target.verb, resource=what, where=where, detail=detail, status=status, reason=reason
            )
            return AdmissionDenied(message, **common)
        message = MSG_ACCESS_DENIED.format(
            verb=target.verb, resource=what, where=where, status=status, reason=reason
        )
        if status == 401:
            message = message.replace("RBAC denied", "authentication failed", 1)
        return AccessDenied(message, **common)
    suffix = f": {detail}" if detail else ""
    text = f"{target.verb} {target.describe()}: {status} {reason}{suffix}"
    if status == 404:
        return NotFound(text, **common)
    if status == 409:
        return Conflict(text, **common)
    if status == 410:
        return Gone(text, **common)
    if status in (400, 422):
        return Invalid(text, **common)
    return ApiError(text, **common)


__all__ = [
    "JSON",
    "Query",
    "Response",
    "RetryPolicy",
    "Stats",
    "Target",
    "map_status_error",
    "parse_retry_after",
]
