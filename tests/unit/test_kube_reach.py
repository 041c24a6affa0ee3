"""The reachability probe: every broken-server class, the one line, and the facade's breaker.

The HTTP call is injected (a function that returns a status or raises what urllib3 raises), so each
class is decided without a network; tests/cluster/test_reach_backends.py runs the same classes
against real servers behind a loopback proxy.
"""

from __future__ import annotations

import socket
import ssl
import threading

import pytest
import urllib3.exceptions
from _kube_stub import Reply, make_cluster

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube import reach
from aicr_pytest.kube.errors import ApiUnreachable, ClusterUnreachable
from aicr_pytest.kube.reach import Reach, Where, classify_status, probe

WHERE = Where(
    server="https://10.0.0.1:6443", context="prod", cluster="prod-cluster", user="alice", ca="/ca.pem"
)


def _raises(exc: BaseException) -> reach.Send:
    def send(timeout: float) -> int:
        raise exc

    return send


def _wrapped(inner: BaseException) -> BaseException:
    """What urllib3 raises around a socket error: MaxRetryError(reason=NewConnectionError) chained."""
    try:
        try:
            raise inner
        except BaseException as low:
            raise urllib3.exceptions.NewConnectionError(
                None, f"Failed to establish a new connection: {low}"
            ) from low  # type: ignore[arg-type]
    except urllib3.exceptions.NewConnectionError as mid:
        return urllib3.exceptions.MaxRetryError(None, "/version", mid)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "klass"),
    [
        (_wrapped(ConnectionRefusedError(111, "Connection refused")), reach.REFUSED),
        (_wrapped(socket.gaierror(-2, "Name or service not known")), reach.DNS),
        (
            ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
            reach.TLS,
        ),
        (urllib3.exceptions.ReadTimeoutError(None, "/version", "Read timed out."), reach.SILENT),  # type: ignore[arg-type]
        (TimeoutError("timed out"), reach.SILENT),
        (
            urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
            reach.UNREACHABLE,
        ),
    ],
)
def test_transport_failures_are_classified(exc: BaseException, klass: str) -> None:
    verdict = probe(_raises(exc), WHERE, timeout=1.0)
    assert verdict.klass == klass
    assert not verdict.ok


def test_tls_wrapped_by_the_client_as_status_zero_is_tls() -> None:
    """The kubernetes client re-raises an SSLError as ApiException(status=0) inside the except."""

    class ApiException(Exception):
        status = 0

    def send(timeout: float) -> int:
        try:
            raise urllib3.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
        except urllib3.exceptions.SSLError:
            raise ApiException("SSLError") from None

    verdict = probe(send, WHERE, 1.0)
    assert verdict.klass == reach.TLS


@pytest.mark.parametrize(
    ("status", "klass"),
    [
        (200, None),
        (404, None),
        (401, reach.UNAUTHORIZED),
        (403, reach.FORBIDDEN),
        (429, reach.THROTTLED),
        (500, reach.SERVER_ERROR),
        (503, reach.SERVER_ERROR),
    ],
)
def test_statuses(status: int, klass: str | None) -> None:
    assert classify_status(status) == klass
    verdict = probe(lambda t: status, WHERE, 1.0)
    assert verdict.klass == klass
    assert verdict.ok is (klass is None)


def test_a_send_that_never_returns_is_silent_at_the_bound() -> None:
    release = threading.Event()
    ticks = iter([0.0, 3.0])

    def send(timeout: float) -> int:
        release.wait(5.0)
        return 200

    try:
        verdict = probe(send, WHERE, timeout=0.05, grace=0.05, monotonic=lambda: next(ticks))
    finally:
        release.set()
    assert verdict.klass == reach.SILENT
    assert verdict.what() == "no answer within 0.05s"


@pytest.mark.parametrize(
    ("verdict", "line"),
    [
        (
            Reach(WHERE, reach.REFUSED),
            "cannot reach the cluster at https://10.0.0.1:6443 (context prod, user alice): "
            "connection refused; check that context prod is the cluster you mean "
            "(kubectl config get-contexts) and that its server address https://10.0.0.1:6443 is up "
            "and reachable from here",
        ),
        (
            Reach(WHERE, reach.TLS, detail="certificate verify failed"),
            "cannot reach the cluster at https://10.0.0.1:6443 (context prod, user alice): "
            "TLS handshake failed (certificate verify failed); cluster prod-cluster's "
            "certificate-authority (/ca.pem) must be the CA that signed the server's certificate, "
            "and the certificate must name 10.0.0.1",
        ),
        (
            Reach(WHERE, reach.UNAUTHORIZED, status=401),
            "cannot reach the cluster at https://10.0.0.1:6443 (context prod, user alice): 401 Unauthorized "
            "(the credential was refused); renew user alice's credential (log in again, or refresh its token "
            "or client certificate)",
        ),
        (
            Reach(WHERE, reach.SILENT, seconds=10),
            "cannot reach the cluster at https://10.0.0.1:6443 (context prod, user alice): no answer within "
            "10s; something between here and https://10.0.0.1:6443 holds the connection (a proxy, a "
            "firewall, a stopped control plane): check the network path, or raise --reach-timeout",
        ),
    ],
)
def test_the_one_line_names_server_class_and_fix(verdict: Reach, line: str) -> None:
    assert verdict.line() == line
    assert "\n" not in line


@pytest.mark.parametrize("klass", reach.CLASSES)
def test_every_class_has_words_and_a_fix(klass: str) -> None:
    verdict = Reach(WHERE, klass, status=503)
    assert verdict.what() and verdict.fix()
    assert verdict.line().startswith("cannot reach the cluster at https://10.0.0.1:6443")


def test_dns_for_a_name_that_cannot_resolve_is_dns() -> None:
    """A real lookup of a reserved name (RFC 6761 ``.invalid``): no network needed to fail."""

    def send(timeout: float) -> int:
        socket.getaddrinfo("api.cluster.invalid", 6443)
        return 200

    verdict = probe(send, Where(server="https://api.cluster.invalid:6443"), 5.0)
    assert verdict.klass == reach.DNS
    assert "host name api.cluster.invalid does not resolve" in verdict.line()


def test_the_breaker_trips_on_a_transport_failure_and_then_fails_fast() -> None:
    calls: list[str] = []

    def handler(call: object) -> Reply | BaseException:
        calls.append("x")
        return urllib3.exceptions.NewConnectionError(None, "Connection refused")  # type: ignore[arg-type]

    cluster, _api, sleeps = make_cluster(handler)
    verdicts = iter([Reach(WHERE, reach.REFUSED)])

    def check() -> ClusterUnreachable | None:
        v = next(verdicts)
        return ClusterUnreachable(v.line(), reach=v)

    cluster.reach_check = check
    with pytest.raises(ClusterUnreachable, match="connection refused") as first:
        cluster.server_version()
    assert isinstance(first.value, Inconclusive)  # every check ends `other` with it
    assert len(calls) == 1 and sleeps.calls == []  # no retry budget spent
    with pytest.raises(ClusterUnreachable, match="connection refused"):
        cluster.get("v1", "Namespace", "default")
    assert len(calls) == 1  # nothing sent: the breaker answers


def test_a_transient_failure_with_the_server_still_there_is_retried_as_before() -> None:
    answers = iter([urllib3.exceptions.NewConnectionError(None, "reset"), Reply(200, {"major": "1"})])  # type: ignore[arg-type]
    cluster, _api, _sleeps = make_cluster(lambda call: next(answers))
    probes: list[int] = []

    def check() -> ClusterUnreachable | None:
        probes.append(1)
        return None

    cluster.reach_check = check
    assert cluster.server_version() == {"major": "1"}
    assert probes == [1] and cluster.tripped is None


def test_5xx_on_every_request_trips_once_the_retries_are_spent() -> None:
    cluster, _api, _sleeps = make_cluster(lambda call: Reply(503, {}, reason="Service Unavailable"))
    cluster.reach_check = lambda: ClusterUnreachable(Reach(WHERE, reach.SERVER_ERROR, status=503).line())
    with pytest.raises(ClusterUnreachable, match="503 from the API server"):
        cluster.server_version()
    assert cluster.tripped is not None


def test_without_a_reach_check_the_old_error_stands() -> None:
    cluster, _api, _sleeps = make_cluster(lambda call: Reply(503, {}, reason="Service Unavailable"))
    with pytest.raises(ApiUnreachable) as err:
        cluster.server_version()
    assert not isinstance(err.value, ClusterUnreachable)
