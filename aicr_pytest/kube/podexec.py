"""Run a command in a pod's container (``pods/exec``) and collect what it wrote and how it ended.

The API server speaks the Kubernetes remote-command protocol over WebSocket (``v5.channel.k8s.io``,
falling back to ``v4.channel.k8s.io``): every binary frame starts with a channel byte -- 1 stdout,
2 stderr, 3 the final status (a ``Status`` object: ``Success``, or ``Failure`` with reason
``NonZeroExitCode`` and the exit code as cause ``ExitCode``), 255 "channel closed" (v5 only). The
connection is set up with the ``kubernetes`` client's TLS and proxy settings (imported lazily).

:func:`exec_in_pod` raises only when the exec cannot start: the API server refused the upgrade
(:class:`AccessDenied` for RBAC, :class:`NotFound` for a missing pod, :class:`ApiError` otherwise) or
could not be reached (:class:`ApiUnreachable`). Once the command runs, everything else -- a non-zero
exit, a failure status without an exit code, a stream that ended early, the deadline -- is data in
the returned :class:`ExecResult`, for the caller to judge. The request is recorded as ``get`` and
``create pods/exec``: the API server authorizes a WebSocket exec upgrade (an HTTP GET) for both.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import MSG_UNREACHABLE, ApiUnreachable
from aicr_pytest.kube.transport import Target, map_status_error

__all__ = ["ExecResult", "exec_in_pod", "exec_status"]

STDOUT, STDERR, ERROR, CLOSE = 1, 2, 3, 255
#: Most output kept per stream; more is counted, not kept.
MAX_STREAM_BYTES = 4 << 20


@dataclass(frozen=True)
class ExecResult:
    """How a command ended: ``exit_code`` when the status carried one (0 for ``Success``);
    ``error`` when it ended otherwise (a failure status without an exit code, a stream cut short,
    the deadline)."""

    stdout: str
    stderr: str
    exit_code: int | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_code == 0


def exec_status(raw: bytes | str) -> tuple[int | None, str | None]:
    """(exit code, error) from the status channel's ``Status`` document."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None, f"unparsable exec status: {str(raw)[:200]!r}"
    if not isinstance(doc, dict):
        return None, f"unparsable exec status: {str(raw)[:200]!r}"
    if doc.get("status") == "Success":
        return 0, None
    if doc.get("reason") == "NonZeroExitCode":
        for cause in (doc.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                try:
                    return int(str(cause.get("message"))), None
                except ValueError:
                    break
    return None, str(doc.get("message") or doc.get("reason") or "exec failed")


def exec_url(host: str, namespace: str, pod: str, container: str, command: Sequence[str]) -> str:
    query = [("command", c) for c in command]
    query += [("container", container), ("stdout", "true"), ("stderr", "true")]
    query += [("stdin", "false"), ("tty", "false")]
    base = host.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/exec"
    return f"{base}{path}?{urlencode(query, quote_via=quote)}"


def exec_in_pod(
    cluster: Cluster,
    namespace: str,
    pod: str,
    container: str,
    command: Sequence[str],
    *,
    timeout: float = 60.0,
) -> ExecResult:
    """Run ``command`` in ``namespace/pod``'s ``container`` (module docstring); waits at most ``timeout``."""
    from kubernetes.stream.ws_client import create_websocket
    from websocket import ABNF, WebSocketBadStatusException, WebSocketException

    cluster._record(Target("get", "", "pods/exec", namespace, pod))
    target = Target("create", "", "pods/exec", namespace, pod)
    cluster._record(target)
    api_client = cluster.api_client
    headers: dict[str, str] = {}
    api_client.update_params_for_auth(headers, [], ["BearerToken"], "", "GET", None)
    headers = {k.lower(): v for k, v in headers.items()}
    url = exec_url(cluster.host, namespace, pod, container, command)
    with cluster._lock:
        cluster.stats.requests += 1
        cluster.stats.by_verb["create"] += 1
    try:
        sock: Any = create_websocket(api_client.configuration, url, headers)  # type: ignore[no-untyped-call]
    except WebSocketBadStatusException as exc:
        body = exc.resp_body if isinstance(exc.resp_body, bytes) else str(exc.resp_body or "").encode()
        raise map_status_error(int(exc.status_code), "", body, target) from exc
    except (OSError, WebSocketException) as exc:
        raise ApiUnreachable(
            MSG_UNREACHABLE.format(method="GET", path=url.split("?", 1)[0], cause=exc, attempts=1),
            verb="create",
            resource="pods/exec",
            namespace=namespace,
            name=pod,
        ) from exc
    out = {STDOUT: bytearray(), STDERR: bytearray()}
    status: bytes | None = None
    error: str | None = None
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                error = f"timed out after {timeout:g}s waiting for the command to finish"
                break
            sock.settimeout(remaining)
            try:
                opcode, frame = sock.recv_data_frame(True)
            except (TimeoutError, OSError, WebSocketException) as exc:
                if status is None:
                    error = (
                        f"timed out after {timeout:g}s waiting for the command to finish"
                        if "timed out" in str(exc).lower()
                        else f"exec stream ended without a status: {type(exc).__name__}: {exc}"
                    )
                break
            if opcode == ABNF.OPCODE_CLOSE:
                break
            data = bytes(frame.data or b"")
            if not data:
                continue
            channel, payload = data[0], data[1:]
            if channel in out:
                room = MAX_STREAM_BYTES - len(out[channel])
                out[channel] += payload[: max(0, room)]
            elif channel == ERROR:
                status = (status or b"") + payload
            # CLOSE (v5) and anything else: nothing to keep
    finally:
        with contextlib.suppress(Exception):
            sock.close()
    exit_code: int | None = None
    if status is not None:
        exit_code, status_error = exec_status(status)
        error = error or status_error
    elif error is None:
        error = "exec stream ended without a status"
    return ExecResult(
        stdout=out[STDOUT].decode("utf-8", "replace"),
        stderr=out[STDERR].decode("utf-8", "replace"),
        exit_code=exit_code,
        error=error,
    )
