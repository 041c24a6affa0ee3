"""Can this process reach the cluster at all?  One bounded request, classified.

Before any check talks to the cluster (and again when a request mid-run fails at the transport level
or keeps failing), :func:`probe` sends one ``GET /version`` under a hard wall-clock bound and sorts
the answer into one of a few classes an operator can act on:

========================  =====================================================================
class                     what was seen
========================  =====================================================================
``refused``               TCP connection refused (nothing listens at the server's address)
``dns``                   the server's host name does not resolve
``tls``                   the handshake failed: a certificate from another CA, a wrong host name
``unauthorized``          401: the credential was refused
``forbidden``             403 on ``/version`` (every authenticated user may read it by default)
``server-error``          5xx
``throttled``             429
``silent``                the connection was accepted (or is pending) and no answer came in time
``unreachable``           any other transport failure
========================  =====================================================================

``GET /version`` answering 2xx (or any other status: 404 from an aggregator, say) is *reachable*.
:class:`Reach` carries the class, the server, the kubeconfig context/cluster/user it came from
(:class:`Where`) and renders :meth:`Reach.line`: one line that names the server, the class and the
fix.  The HTTP call is injected (:data:`Send`), so the classification is unit-tested without a
network; :func:`api_client_send` is the real one over the ``kubernetes`` client's transport.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: default bound of the reachability request (``--reach-timeout`` / ``execution.reachTimeout``)
DEFAULT_REACH_TIMEOUT_S = 10.0
PROBE_PATH = "/version"

REFUSED = "refused"
DNS = "dns"
TLS = "tls"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
SERVER_ERROR = "server-error"
THROTTLED = "throttled"
SILENT = "silent"
UNREACHABLE = "unreachable"
CLASSES = (REFUSED, DNS, TLS, UNAUTHORIZED, FORBIDDEN, SERVER_ERROR, THROTTLED, SILENT, UNREACHABLE)

#: the one line an unreachable cluster prints (and every check's ``other`` reason)
MSG_UNREACHABLE_CLUSTER = "cannot reach the cluster at {server}{where}: {what}; {fix}"

#: ``send(timeout)``: one ``GET /version``; returns the HTTP status, raises on a transport failure
Send = Callable[[float], int]


@dataclass(frozen=True)
class Where:
    """Which kubeconfig entries a connection came from (empty strings where not known)."""

    server: str
    context: str = ""
    cluster: str = ""
    user: str = ""
    ca: str = ""

    @property
    def host(self) -> str:
        return urlsplit(self.server).hostname or self.server

    def named(self) -> str:
        """`` (context c, cluster k, user u)`` from what is known."""
        parts = [f"{k} {v}" for k, v in (("context", self.context), ("user", self.user)) if v]
        return f" ({', '.join(parts)})" if parts else ""


@dataclass(frozen=True)
class Reach:
    """The verdict of one probe: ``klass`` is ``None`` when the server answered."""

    where: Where
    klass: str | None
    detail: str = ""
    status: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.klass is None

    def what(self) -> str:
        """What was seen, in a few words."""
        k = self.klass
        if k == REFUSED:
            return "connection refused"
        if k == DNS:
            return f"host name {self.where.host} does not resolve"
        if k == TLS:
            return f"TLS handshake failed ({self.detail})" if self.detail else "TLS handshake failed"
        if k == UNAUTHORIZED:
            return "401 Unauthorized (the credential was refused)"
        if k == FORBIDDEN:
            return "403 Forbidden on /version"
        if k == SERVER_ERROR:
            return f"{self.status} from the API server"
        if k == THROTTLED:
            return "429 Too Many Requests"
        if k == SILENT:
            return f"no answer within {self.seconds:g}s"
        if k == UNREACHABLE:
            return self.detail or "the connection failed"
        return "reachable"

    def fix(self) -> str:
        """What to do about it, naming the kubeconfig entry to look at."""
        w = self.where
        ctx = f"context {w.context}" if w.context else "the current context"
        k = self.klass
        if k in (REFUSED, DNS, UNREACHABLE):
            return (
                f"check that {ctx} is the cluster you mean (kubectl config get-contexts) and that its "
                f"server address {w.server} is up and reachable from here"
            )
        if k == TLS:
            ca = f" ({w.ca})" if w.ca else ""
            cluster = f"cluster {w.cluster}" if w.cluster else ctx
            return (
                f"{cluster}'s certificate-authority{ca} must be the CA that signed the server's "
                f"certificate, and the certificate must name {w.host}"
            )
        if k == UNAUTHORIZED:
            user = f"user {w.user}" if w.user else f"the user of {ctx}"
            return f"renew {user}'s credential (log in again, or refresh its token or client certificate)"
        if k == FORBIDDEN:
            user = f"user {w.user}" if w.user else f"the user of {ctx}"
            return (
                f"{user} is refused even /version: check the credential and what sits in front of {w.server}"
            )
        if k in (SERVER_ERROR, THROTTLED):
            return (
                "the control plane is overloaded or unhealthy: check its health "
                "(kubectl get --raw /readyz) and rerun"
            )
        if k == SILENT:
            return (
                f"something between here and {w.server} holds the connection (a proxy, a firewall, a "
                "stopped control plane): check the network path, or raise --reach-timeout"
            )
        return ""

    def line(self) -> str:
        """The one line: server, class, fix."""
        return MSG_UNREACHABLE_CLUSTER.format(
            server=self.where.server, where=self.where.named(), what=self.what(), fix=self.fix()
        )


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop(0)
        if cur is None or any(cur is s for s in seen):
            continue
        seen.append(cur)
        todo.extend([cur.__cause__, cur.__context__])
        reason = getattr(cur, "reason", None)  # urllib3's MaxRetryError / ProtocolError carry one
        if isinstance(reason, BaseException):
            todo.append(reason)
        todo.extend(a for a in getattr(cur, "args", ()) if isinstance(a, BaseException))
    return seen


def classify_exception(exc: BaseException) -> tuple[str, str]:
    """``(class, detail)`` for a transport failure (the whole cause chain is read)."""
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain)
    for e in chain:
        if isinstance(e, ssl.SSLCertVerificationError):
            message = getattr(e, "verify_message", None) or getattr(e, "reason", None)
            return TLS, str(message or "certificate verify failed")
    for e in chain:  # a connection dropped mid-handshake is not a certificate problem
        if isinstance(e, ssl.SSLError) and not isinstance(e, ssl.SSLEOFError | ssl.SSLZeroReturnError):
            return TLS, str(getattr(e, "reason", None) or e)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return TLS, "certificate verify failed"
    for e in chain:
        if isinstance(e, socket.gaierror) or type(e).__name__ == "NameResolutionError":
            return DNS, str(e)
    if "Name or service not known" in text or "nodename nor servname" in text:
        return DNS, ""
    for e in chain:
        if isinstance(e, ConnectionRefusedError):
            return REFUSED, ""
    if "Connection refused" in text or "ECONNREFUSED" in text:
        return REFUSED, ""
    for e in chain:
        if isinstance(e, TimeoutError | socket.timeout) or "Timeout" in type(e).__name__:
            return SILENT, ""
    if "timed out" in text:
        return SILENT, ""
    first = chain[-1] if chain else exc
    return UNREACHABLE, f"{type(first).__name__}: {first}"[:200]


def classify_status(status: int) -> str | None:
    """The class of an HTTP status (``None``: the server answered and can be worked with)."""
    if status == 401:
        return UNAUTHORIZED
    if status == 403:
        return FORBIDDEN
    if status == 429:
        return THROTTLED
    if 500 <= status < 600:
        return SERVER_ERROR
    return None


def probe(
    send: Send,
    where: Where,
    timeout: float = DEFAULT_REACH_TIMEOUT_S,
    *,
    grace: float = 1.0,
    monotonic: Callable[[], float] | None = None,
) -> Reach:
    """One ``send(timeout)`` on a daemon thread, waited for ``timeout + grace`` seconds at most.

    A send still running then (a server that accepted and never answered, a handshake that stalls)
    is ``silent``; its thread is left to its socket timeout (daemon: it never holds the process).
    """
    import time

    clock = monotonic or time.monotonic
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["status"] = send(timeout)
        except BaseException as exc:  # classified below, whatever it is
            box["error"] = exc

    start = clock()
    worker = threading.Thread(target=run, name="aicr-reach-probe", daemon=True)
    worker.start()
    worker.join(timeout + grace)
    took = round(clock() - start, 1)
    if worker.is_alive():
        return Reach(where, SILENT, seconds=timeout)
    if "error" in box:
        klass, detail = classify_exception(box["error"])
        return Reach(where, klass, detail=detail, seconds=timeout if klass == SILENT else took)
    status = int(box.get("status", 0))
    return Reach(where, classify_status(status), status=status, seconds=took)


def configuration_send(configuration: Any) -> Send:
    """The real :data:`Send` for a connected run: each probe on a client of its own (a fresh
    connection pool), so a pooled connection the server dropped is never what gets classified."""

    def send(timeout: float) -> int:
        from kubernetes import client as k8s_client

        api_client = k8s_client.ApiClient(configuration)
        try:
            return api_client_send(api_client)(timeout)
        finally:
            api_client.close()  # type: ignore[no-untyped-call]

    return send


def api_client_send(api_client: Any) -> Send:
    """``GET /version`` over a ``kubernetes`` client (its CA, client certificate, token or exec
    credential), no retry, ``timeout`` for connect and read."""

    def send(timeout: float) -> int:
        headers: dict[str, str] = dict(api_client.default_headers)
        headers["Accept"] = "application/json"
        queries: list[tuple[str, str]] = []
        api_client.update_params_for_auth(headers, queries, ["BearerToken"], PROBE_PATH, "GET", None)
        try:
            raw = api_client.call_api(
                "GET",
                str(api_client.configuration.host) + PROBE_PATH,
                header_params=headers,
                _request_timeout=(timeout, timeout),
            )
        except Exception as exc:
            status = getattr(exc, "status", None)
            if isinstance(status, int) and status > 0:
                return status
            raise
        try:
            raw.response.read(65536)
        finally:
            raw.response.release_conn()
        return int(raw.status)

    return send


__all__ = [
    "CLASSES",
    "DEFAULT_REACH_TIMEOUT_S",
    "DNS",
    "FORBIDDEN",
    "MSG_UNREACHABLE_CLUSTER",
    "PROBE_PATH",
    "REFUSED",
    "SERVER_ERROR",
    "SILENT",
    "THROTTLED",
    "TLS",
    "UNAUTHORIZED",
    "UNREACHABLE",
    "Reach",
    "Send",
    "Where",
    "api_client_send",
    "classify_exception",
    "classify_status",
    "configuration_send",
    "probe",
]


def reach_checker(
    api_client: Any, where: Where, timeout: float = DEFAULT_REACH_TIMEOUT_S, *, send: Send | None = None
) -> Callable[[], Any]:
    """What :attr:`~aicr_pytest.kube.rest.RestClient.reach_check` calls: probe, and on an
    unreachable verdict the :class:`~aicr_pytest.kube.errors.ClusterUnreachable` to raise."""
    from aicr_pytest.kube.errors import ClusterUnreachable

    sender = send or configuration_send(api_client.configuration)

    def check() -> ClusterUnreachable | None:
        verdict = probe(sender, where, timeout)
        return None if verdict.ok else ClusterUnreachable(verdict.line(), reach=verdict)

    return check


__all__ += ["reach_checker"]
