"""The HTTP transport of the fake API server: one thread per connection, chunked streams, faults.

:class:`_Handler` parses a request, applies the scripted :class:`~.faults.Faults` (auth, status,
dropped connection) and hands the rest to the API front end (:class:`ApiFrontEnd`, which
:class:`~aicr_pytest.testing.server.FakeApiServer` is), then writes its :class:`Response`.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from aicr_pytest.testing.server.faults import Faults
from aicr_pytest.testing.server.websocket import ExecOutcome, accept_key, choose_protocol, exec_frames
from aicr_pytest.testing.store import ApiError, Obj, Store

JSON_CT = "application/json"


@dataclass
class Response:
    status: int
    body: Obj | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterator[bytes] | None = None
    content_type: str = JSON_CT


def _status_error(code: int, message: str) -> ApiError:
    reasons = {
        400: "BadRequest",
        403: "Forbidden",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        502: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
        404: "NotFound",
        405: "MethodNotAllowed",
    }
    return ApiError(code, reasons.get(code, "Unknown"), message)


def query_int(value: str | None, name: str) -> int | None:
    """An integer query parameter (absent or empty: ``None``); anything else is a 400."""
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise ApiError.bad_request(f"invalid value for {name}: {value!r}") from exc


class ApiFrontEnd(Protocol):
    """What the HTTP handler needs of the API server behind it."""

    @property
    def store(self) -> Store: ...

    @property
    def faults(self) -> Faults: ...

    @property
    def token(self) -> str | None: ...

    def record(self, method: str, path: str, query: str, status: int, watch: bool) -> None: ...

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes, alive: Any
    ) -> Response: ...

    def exec_pod(self, path: str, query: dict[str, list[str]]) -> ExecOutcome: ...


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    api: ApiFrontEnd
    #: set for HTTPS: each accepted connection is wrapped; the TLS handshake happens in the
    #: connection's own thread (on its first read), never in the accept loop
    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a watch closed early) or failed the TLS handshake (it does not
        trust the CA) is normal: no traceback on stderr."""
        import sys

        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per response and no Nagle delay: otherwise headers and body go out as two
    # segments and delayed ACKs add ~40 ms to every request.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr access logs
        return

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _alive(self) -> bool:
        """False once the client closed its end (so idle watches/follows end promptly)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable:
                if isinstance(self.connection, ssl.SSLSocket):
                    return self._tls_alive()
                return bool(self.connection.recv(1, socket.MSG_PEEK) != b"")
        except (OSError, ValueError):
            return False
        return True

    def _tls_alive(self) -> bool:
        """TLS cannot peek: read what arrived (a client sends nothing while it watches, so
        anything readable is ``close_notify`` or the end of the connection)."""
        conn = self.connection
        assert isinstance(conn, ssl.SSLSocket)
        conn.setblocking(False)
        try:
            return conn.recv(1) != b""
        except ssl.SSLWantReadError:
            return True  # part of a record: nothing decided yet
        except (OSError, ValueError):
            return False
        finally:
            with contextlib.suppress(OSError):
                conn.setblocking(True)

    def _serve(self, method: str) -> None:
        activity = self.server.api.store.activity
        activity.request_started()  # busy until the response is written (see testing.virtualtime)
        try:
            self._serve_request(method)
        finally:
            activity.request_finished()

    def _serve_request(self, method: str) -> None:
        api = self.server.api
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        is_watch = query.get("watch") in ("true", "1")
        if api.token is not None and headers.get("authorization") != f"Bearer {api.token}":
            self._send(
                Response(401, ApiError(401, "Unauthorized", "Unauthorized").status()),
                method,
                path,
                parts.query,
                is_watch,
            )
            return
        fault = api.faults.take(method, path, is_watch, ("status", "drop"), raw)
        if fault is not None and fault.action == "drop":
            api.record(method, path, parts.query, 0, is_watch)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None:
            text = fault.respond(raw) if fault.respond is not None else fault.message
            err = _status_error(fault.status, text or _fault_message(fault.status))
            if fault.reason:
                err.reason = fault.reason
            headers_out = {}
            if fault.retry_after is not None:
                headers_out["Retry-After"] = str(fault.retry_after)
                err.details = {"retryAfterSeconds": fault.retry_after}
            self._send(
                Response(fault.status, err.status(), headers=headers_out), method, path, parts.query, is_watch
            )
            return
        if method == "GET" and headers.get("upgrade", "").lower() == "websocket":
            self._upgrade(path, parts.query, headers)
            return
        try:
            response = api.handle(method, path, query, headers, raw, self._alive)
        except ApiError as exc:
            response = Response(exc.code, exc.status(), headers=exc.headers)
        except Exception as exc:  # a bug in the fake: answer like an apiserver panic would
            response = Response(500, _status_error(500, f"fake apiserver error: {exc!r}").status())
        self._send(response, method, path, parts.query, is_watch)

    def _upgrade(self, path: str, query: str, headers: dict[str, str]) -> None:
        """``pods/exec`` over WebSocket (:mod:`.websocket`): the handshake, then the command's frames."""
        api = self.server.api
        protocol = choose_protocol(headers.get("sec-websocket-protocol", ""))
        try:
            if protocol is None or "sec-websocket-key" not in headers:
                raise ApiError(400, "BadRequest", "unable to upgrade connection: missing channel protocol")
            outcome = api.exec_pod(path, parse_qs(query, keep_blank_values=True))
        except ApiError as exc:
            self._send(Response(exc.code, exc.status(), headers=exc.headers), "GET", path, query, False)
            return
        except Exception as exc:  # a bug in the fake: answer like an apiserver panic would
            err = _status_error(500, f"fake apiserver error: {exc!r}")
            self._send(Response(500, err.status()), "GET", path, query, False)
            return
        api.record("GET", path, query, 101, False)
        self.close_connection = True
        try:
            self.send_response(101, "Switching Protocols")
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept_key(headers["sec-websocket-key"]))
            self.send_header("Sec-WebSocket-Protocol", protocol)
            self.end_headers()
            for frame in exec_frames(outcome, protocol):
                self.wfile.write(frame)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def _send(self, response: Response, method: str, path: str, query: str, is_watch: bool) -> None:
        api = self.server.api
        api.record(method, path, query, response.status, is_watch)
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Cache-Control", "no-cache, private")
            for k, v in response.headers.items():
                self.send_header(k, v)
            if response.stream is not None:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in response.stream:
                    if chunk:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            if isinstance(response.body, str):
                data = response.body.encode()
            elif response.body is None:
                data = b""
            else:
                data = json.dumps(response.body, separators=(",", ":")).encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


def _fault_message(status: int) -> str:
    if status == 429:
        return "Too many requests, please try again later."
    if status == 503:
        return "the server is currently unable to handle the request"
    return "Internal error occurred: injected fault"
