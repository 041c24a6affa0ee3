"""List pagination helpers of :meth:`aicr_pytest.kube.client.Cluster.list_pages`.

:func:`_peek_continue` reads a list page's ``metadata.continue`` from the top of the body (the
API server writes it before ``items``) so the next page can be requested on a background thread
(:class:`_Prefetch`) while this process decodes the current one; :func:`_continue_from_status`
reads the token a 410 for an expired ``continue`` may carry.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable

from aicr_pytest.kube.transport import Response


class _Prefetch:
    """``fetch(token)`` running on its own thread; :meth:`result` hands back its response or
    re-raises its error in the caller's thread."""

    def __init__(self, fetch: Callable[[str], Response], token: str) -> None:
        self._page: Response | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(fetch, token), name="aicr-list-prefetch", daemon=True
        )
        self._thread.start()

    def _run(self, fetch: Callable[[str], Response], token: str) -> None:
        try:
            self._page = fetch(token)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self) -> Response:
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        assert self._page is not None
        return self._page

    def discard(self) -> None:
        """Wait for the in-flight request (bounded by its timeouts) and drop what it got.

        Not while the interpreter shuts down: its daemon threads are frozen then, never to end."""
        if not sys.is_finalizing():
            self._thread.join()
        self._page = self._error = None


_JSON_DECODER = json.JSONDecoder()
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, i: int) -> int:
    match = _JSON_SPACE.match(text, i)
    return match.end() if match else i


def _peek_continue(data: bytes, head: int = 16384) -> str | None:
    """A list body's ``metadata.continue``, read from the top-level members before ``items``
    without decoding the items (the API server writes kind, apiVersion, metadata, items in that
    order). ``None`` when there is no token or it cannot tell that cheaply (``items`` first, a
    truncated head, not a JSON object): the caller then takes the token from the full parse."""
    try:
        text = data[:head].decode("utf-8", "ignore")
        i = _skip_space(text, 0)
        if text[i : i + 1] != "{":
            return None
        i += 1
        while True:
            i = _skip_space(text, i)
            key, i = _JSON_DECODER.raw_decode(text, i)
            i = _skip_space(text, i)
            if not isinstance(key, str) or key == "items" or text[i : i + 1] != ":":
                return None
            i = _skip_space(text, i + 1)
            value, i = _JSON_DECODER.raw_decode(text, i)
            if key == "metadata":
                token = value.get("continue") if isinstance(value, dict) else None
                return token if isinstance(token, str) and token else None
            i = _skip_space(text, i)
            if text[i : i + 1] != ",":
                return None
            i += 1
    except ValueError:
        return None


def _continue_from_status(body: str) -> str | None:
    try:
        status = json.loads(body)
    except (ValueError, TypeError):
        return None
    token = ((status or {}).get("metadata") or {}).get("continue") if isinstance(status, dict) else None
    return str(token) if token else None
