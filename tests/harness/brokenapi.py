"""A loopback TCP proxy in front of an API server that can break it the ways real ones break.

:class:`BrokenApi` binds ``127.0.0.1`` only.  Its :attr:`mode`:

* ``pass`` — bytes are forwarded both ways to the upstream server (TLS passes through untouched);
* ``stall`` — connections are accepted and never answered (what a silent firewall or a stopped
  control plane behind a load balancer looks like);
* ``refuse`` — the listening socket is closed, so connections are refused;
* an HTTP status (``500``, ``503``, ``429``, ``401``, ``403``) — every request is answered with it
  (plain HTTP; :meth:`kubeconfig` then names an ``http://`` server).

Switch the mode while a run is going (:meth:`set_mode`) to take the cluster away mid-run.  Every
socket has a bounded life: :meth:`close` ends them all.
"""

from __future__ import annotations

import contextlib
import copy
import socket
import threading
from pathlib import Path
from typing import Any

import yaml

_REASONS = {
    401: "Unauthorized",
    403: "Forbidden",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class BrokenApi:
    def __init__(self, upstream: str | None = None, mode: str | int = "pass") -> None:
        host_port = (upstream or "").split("://", 1)[-1].split("/", 1)[0]
        host, _, port = host_port.rpartition(":")
        self.upstream: tuple[str, int] | None = (host or "127.0.0.1", int(port)) if upstream else None
        self.mode: str | int = mode
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        self.accepted = 0
        if mode == "refuse":
            self._listener.close()
        else:
            self._listener.listen(64)
            threading.Thread(target=self._accept, name="broken-api", daemon=True).start()

    # -- control ---------------------------------------------------------------------------------
    def set_mode(self, mode: str | int) -> None:
        """Change what new connections (and open pass-through ones, for stall/refuse) get."""
        self.mode = mode
        if mode in ("stall", "refuse"):
            with self._lock:
                open_ones, self._sockets = self._sockets, []
            for s in open_ones:  # existing keep-alive connections die with the cluster
                with contextlib.suppress(OSError):
                    s.close()
        if mode == "refuse":
            self._stop_listening()

    def _stop_listening(self) -> None:
        # shutdown() wakes the thread blocked in accept() (close() alone would leave it listening)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()

    def close(self) -> None:
        self._closed = True
        self._stop_listening()
        with self._lock:
            open_ones, self._sockets = self._sockets, []
        for s in open_ones:
            with contextlib.suppress(OSError):
                s.close()

    def __enter__(self) -> BrokenApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def kubeconfig(self, base: Path, out: Path, *, scheme: str | None = None) -> Path:
        """``base`` with every cluster's server pointed here (``scheme`` defaults to the original's;
        a status mode needs ``http``, which also drops the CA)."""
        doc: dict[str, Any] = copy.deepcopy(yaml.safe_load(base.read_text()))
        for entry in doc.get("clusters") or []:
            cluster = entry["cluster"]
            original = str(cluster.get("server", "http://"))
            use = scheme or original.split("://", 1)[0]
            cluster["server"] = self.url(use)
            if use == "http":
                cluster.pop("certificate-authority", None)
                cluster.pop("certificate-authority-data", None)
        out.write_text(yaml.safe_dump(doc, sort_keys=False))
        out.chmod(0o600)
        return out

    # -- serving ---------------------------------------------------------------------------------
    def _keep(self, s: socket.socket) -> None:
        s.settimeout(60.0)  # bounded life, whatever the mode
        with self._lock:
            self._sockets.append(s)

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            mode = self.mode
            if mode == "refuse":
                conn.close()
                return
            self._keep(conn)
            if mode == "stall":
                continue  # held open, never answered, closed by close()/set_mode
            if isinstance(mode, int):
                threading.Thread(target=self._answer, args=(conn, mode), daemon=True).start()
            else:
                threading.Thread(target=self._pipe_open, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket, status: int) -> None:
        body = (
            b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d,"message":"broken-api"}'
            % status
        )
        with contextlib.suppress(OSError):
            while True:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head = (
                    f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nRetry-After: 0\r\n\r\n"
                )
                conn.sendall(head.encode() + body)

    def _pipe_open(self, conn: socket.socket) -> None:
        if self.upstream is None:
            conn.close()
            return
        try:
            up = socket.create_connection(self.upstream, timeout=10.0)
        except OSError:
            conn.close()
            return
        self._keep(up)

        def pipe(src: socket.socket, dst: socket.socket) -> None:
            with contextlib.suppress(OSError):
                while True:
                    chunk = src.recv(65536)
                    if not chunk or self.mode != "pass":
                        break
                    dst.sendall(chunk)
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pipe, args=(conn, up), daemon=True).start()
        threading.Thread(target=pipe, args=(up, conn), daemon=True).start()


__all__ = ["BrokenApi"]
