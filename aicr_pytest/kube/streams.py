"""Streaming responses: :class:`Stream` (watch, followed log: lines, ``shutdown()`` from any thread)
and :class:`WatchStream` (decoded watch events; an ``ERROR`` event raises the mapped exception).

:func:`streams_in_hand` counts the streams of this process whose last line is still with the
caller; the fake cluster's virtual time reads it (through :mod:`aicr_pytest.kube.client`) so it
never moves the clock while a client is still handling the last event it was sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from aicr_pytest.kube.resources import ResourceType
from aicr_pytest.kube.transport import JSON, Target, _stream_end_errors, map_status_error


class _LinesInHand:
    """Streams of this process whose last line is still with the caller (it has not asked for the
    next one, nor closed the stream). Thread-safe; streams are held weakly."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()

    def hold(self, stream: Stream) -> None:
        with self._lock:
            self._streams.add(stream)

    def release(self, stream: Stream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def count(self) -> int:
        with self._lock:
            return sum(1 for s in self._streams if not s.closed)


_LINES_IN_HAND = _LinesInHand()


def streams_in_hand() -> int:
    """How many open streams (watches, followed logs) of this process have handed their caller a
    line it is still working on.

    Zero means every streaming reader of this process is back waiting on the network. The fake
    cluster's virtual time (``aicr_pytest.testing.virtualtime``) reads it so that it never moves the
    clock while a client in the same process is still handling the last event it was sent.
    """
    return _LINES_IN_HAND.count()


class Stream:
    """A streaming response (watch, followed log): iterate lines; ``shutdown()`` from any thread."""

    def __init__(self, response: Any) -> None:
        self._resp = response
        self._closed = False

    def lines(self) -> Iterator[bytes]:
        """Lines without their trailing newline; ends quietly when the server or a peer hangs up."""
        buffer = b""
        try:
            for chunk in self._chunks():
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        break
                    line, buffer = buffer[:newline], buffer[newline + 1 :]
                    yield from self._hand(line)
        except _stream_end_errors():
            # Dropped connection, read timeout, or shutdown() from another thread: stream over.
            if not self._closed:
                buffer = b""
        if buffer and not self._closed:
            yield from self._hand(buffer)

    @property
    def closed(self) -> bool:
        return self._closed

    def _hand(self, line: bytes) -> Iterator[bytes]:
        """Yield ``line``, counted in :func:`streams_in_hand` until the caller asks for more."""
        _LINES_IN_HAND.hold(self)
        try:
            yield line
        finally:
            _LINES_IN_HAND.release(self)

    def _chunks(self) -> Iterator[bytes]:
        resp = self._resp
        if getattr(resp, "chunked", False) and resp.supports_chunked_reads():
            yield from resp.read_chunked(65536)
            return
        while True:
            data = resp.read1(65536)
            if not data:
                return
            yield data

    def shutdown(self) -> None:
        """Unblock a reader stuck in a read (safe from another thread)."""
        self._closed = True
        with contextlib.suppress(Exception):
            self._resp.shutdown()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(Exception):
            self._resp.close()
        with contextlib.suppress(Exception):
            self._resp.release_conn()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WatchStream:
    """Decoded watch events; ``shutdown()`` (any thread) ends the iteration early."""

    def __init__(self, stream: Stream, rtype: ResourceType, target: Target) -> None:
        self.stream = stream
        self.rtype = rtype
        self._target = target

    def __iter__(self) -> Iterator[JSON]:
        for line in self.stream.lines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                return  # a torn final line from a dropped connection: the caller resumes
            if event.get("type") == "ERROR":
                status = event.get("object") or {}
                code = int(status.get("code") or 500)
                raise map_status_error(
                    code, str(status.get("reason") or ""), json.dumps(status).encode(), self._target
                )
            obj = event.get("object")
            if isinstance(obj, dict):
                obj.setdefault("apiVersion", self.rtype.api_version)
                obj.setdefault("kind", self.rtype.kind)
            yield event

    def shutdown(self) -> None:
        self.stream.shutdown()

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Stream", "WatchStream", "streams_in_hand"]
