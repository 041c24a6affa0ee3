"""The API server's way into the simulated cluster: an HTTP CONNECT proxy on a Unix socket.

kube-apiserver reaches "the cluster" (kubelets for ``pods/log``/``exec``, pods and services for the
``proxy`` subresources) through the dialer of its egress selector's ``cluster`` selection. The test
control plane points that selection at an :class:`EgressProxy` (``HTTPConnect`` over ``uds``, as a
konnectivity server would be), so that:

* traffic to real listeners (kwok's kubelet endpoint on 127.0.0.1) is passed through unchanged;
* traffic to a *pod IP* that kwok made up (``10.244.x.y``, no process behind it) can be routed to a
  local server that plays that pod's container (:meth:`EgressProxy.route`). The apiserver's
  service proxy then works end to end: Service -> EndpointSlice (written by the real EndpointSlice
  controller from the pod's IP and readiness) -> CONNECT <pod IP>:<port> -> the test server.

This is what lets a check probe an inference endpoint through
``/api/v1/namespaces/<ns>/services/<svc>:<port>/proxy/...`` on a real apiserver, which otherwise
refuses loopback endpoint addresses and could not reach a made-up pod IP anyway.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import socketserver
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Final

__all__ = ["EgressProxy", "egress_selector_config"]

log = logging.getLogger("tests.harness.egress")

Address = tuple[str, int]
MAX_HEADER_BYTES: Final = 16 * 1024
CONNECT_TIMEOUT_S: Final = 10.0


def egress_selector_config(socket_path: Path) -> str:
    """An ``EgressSelectorConfiguration`` that sends the ``cluster`` traffic through ``socket_path``."""
    return (
        "apiVersion: apiserver.k8s.io/v1beta1\n"
        "kind: EgressSelectorConfiguration\n"
        "egressSelections:\n"
        "- name: cluster\n"
        "  connection:\n"
        "    proxyProtocol: HTTPConnect\n"
        "    transport:\n"
        "      uds:\n"
        f"        udsName: {socket_path}\n"
    )


def parse_connect(head: bytes) -> Address:
    """``CONNECT host:port HTTP/1.1`` (first line of ``head``) -> ``(host, port)``; ValueError otherwise."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/"):
        raise ValueError(f"not a CONNECT request: {line[:100]!r}")
    host, sep, port = parts[1].rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"CONNECT target without a port: {parts[1][:100]!r}")
    return host.strip("[]"), int(port)


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(1024)  # the apiserver sends nothing after the headers until it gets 200
            if not chunk or len(head) > MAX_HEADER_BYTES:
                return
            head += chunk
        try:
            wanted = parse_connect(head)
        except ValueError as e:
            log.warning("egress: %s", e)
            client.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            return
        proxy = self.server.owner
        target = proxy.target(wanted)
        proxy.record(wanted, target)
        if target == wanted and proxy.is_simulated(wanted[0]):
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            return
        try:
            upstream = socket.create_connection(target, timeout=CONNECT_TIMEOUT_S)
        except OSError as e:
            log.debug("egress: CONNECT %s:%s -> %s:%s failed: %s", *wanted, *target, e)
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            return
        with upstream:
            upstream.settimeout(None)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
            back.start()
            _pipe(client, upstream)
            back.join()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    owner: EgressProxy


class EgressProxy:
    """HTTP CONNECT proxy on a Unix socket: routed targets go to local servers, the rest pass through."""

    def __init__(self, socket_path: Path, *, simulated_networks: Iterable[str] = ()) -> None:
        """``simulated_networks``: CIDRs with nothing behind them (kwok's pod IPs). A CONNECT to an
        address there that is not routed is refused at once (502), as a pod without a listener
        would, instead of hanging on a dial into nowhere."""
        self.socket_path = socket_path
        self.simulated = [ipaddress.ip_network(n, strict=False) for n in simulated_networks]
        self._routes: dict[Address, Address] = {}
        self._lock = threading.Lock()
        #: every CONNECT served: (target asked for, address dialled)
        self.connects: list[tuple[Address, Address]] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> EgressProxy:
        server = _Server(str(self.socket_path), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="egress-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    def route(self, host: str, port: int, target: Address) -> None:
        """Send CONNECTs for ``host:port`` (e.g. a kwok pod IP) to ``target`` (a local server)."""
        with self._lock:
            self._routes[(host, port)] = target

    def unroute(self, host: str, port: int) -> None:
        with self._lock:
            self._routes.pop((host, port), None)

    def routes(self) -> dict[Address, Address]:
        with self._lock:
            return dict(self._routes)

    def target(self, wanted: Address) -> Address:
        with self._lock:
            return self._routes.get(wanted, wanted)

    def is_simulated(self, host: str) -> bool:
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(ip in net for net in self.simulated)

    def record(self, wanted: Address, target: Address) -> None:
        with self._lock:
            self.connects.append((wanted, target))
            del self.connects[:-1000]  # keep the recent ones only
