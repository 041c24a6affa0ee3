"""The server side of ``pods/exec`` over WebSocket, as the fake API server speaks it.

RFC 6455 handshake (``101 Switching Protocols`` with ``Sec-WebSocket-Accept``), then the
Kubernetes remote-command channels: binary frames ``<channel byte><data>`` on 1 (stdout), 2
(stderr) and 3 (the final ``Status``), a v5 close-channel frame per stream, and a close frame. The
command does not run anywhere: a player's :data:`ExecHandler` says what it printed and how it
ended (:class:`ExecOutcome`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ExecHandler",
    "ExecOutcome",
    "accept_key",
    "choose_protocol",
    "encode_frame",
    "exec_frames",
    "exec_status_doc",
]

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
OP_BINARY, OP_CLOSE = 0x2, 0x8


@dataclass(frozen=True)
class ExecOutcome:
    """What a simulated command did: its output, its exit code, or an ``error`` (a failure status
    without an exit code, as a runtime that could not run the command reports it)."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = 0
    error: str | None = None


#: ``handler(container, command) -> ExecOutcome`` (a player stands in for the container).
ExecHandler = Callable[[str, Sequence[str]], ExecOutcome]


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()


def choose_protocol(offered: str) -> str | None:
    wanted = [p.strip() for p in offered.split(",") if p.strip()]
    return next((p for p in PROTOCOLS if p in wanted), None)


def encode_frame(opcode: int, payload: bytes) -> bytes:
    """One unmasked, final frame (servers never mask)."""
    head = bytes([0x80 | opcode])
    size = len(payload)
    if size < 126:
        head += bytes([size])
    elif size < 1 << 16:
        head += bytes([126]) + struct.pack("!H", size)
    else:
        head += bytes([127]) + struct.pack("!Q", size)
    return head + payload


def exec_status_doc(outcome: ExecOutcome) -> dict[str, Any]:
    """The ``Status`` a kubelet writes on the error channel when the command ends."""
    if outcome.error is None and outcome.exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    if outcome.error is None and outcome.exit_code is not None:
        return {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit status {outcome.exit_code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(outcome.exit_code)}]},
        }
    return {
        "metadata": {},
        "status": "Failure",
        "message": outcome.error or "exec failed",
        "reason": "InternalError",
    }


def exec_frames(outcome: ExecOutcome, protocol: str) -> list[bytes]:
    """The frames the server sends for ``outcome``: output, (v5) channel closes, status, close."""
    frames: list[bytes] = []
    for channel, text in ((1, outcome.stdout), (2, outcome.stderr)):
        data = text.encode()
        for start in range(0, len(data), 32 * 1024):
            frames.append(encode_frame(OP_BINARY, bytes([channel]) + data[start : start + 32 * 1024]))
    if protocol.startswith("v5"):
        frames += [encode_frame(OP_BINARY, bytes([255, ch])) for ch in (1, 2)]
    frames.append(encode_frame(OP_BINARY, b"\x03" + json.dumps(exec_status_doc(outcome)).encode()))
    frames.append(encode_frame(OP_CLOSE, struct.pack("!H", 1000)))
    return frames
