"""``pods/log`` of the fake API server: container choice, ``previous``, ``tailLines``,
``limitBytes``, and ``follow`` streamed until the container terminates.

A container that never started answers as the kubelet does (``waiting to start: <reason>``); the
text comes from the store's ``logs`` (``previous_logs`` for ``previous=true``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from aicr_pytest.testing.server.http import Response, query_int
from aicr_pytest.testing.store import ApiError, Obj, Store

__all__ = ["serve_log"]


def serve_log(
    store: Store, ns: str, name: str, q: dict[str, str], alive: Any, stopping: Callable[[], bool]
) -> Response:
    """Answer ``GET .../pods/<name>/log`` from ``store``; ``stopping()`` ends a follow with the server."""
    pods = store.resource("", "v1", "pods")
    assert pods is not None
    pod = store.get(pods, ns, name)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    all_names = names + [c.get("name") for c in spec.get("initContainers") or []]
    container = q.get("container")
    if not container:
        if len(names) != 1:
            raise ApiError.bad_request(
                f"a container name must be specified for pod {name}, "
                f"choose one of: [{' '.join(str(n) for n in all_names)}]"
            )
        container = str(names[0])
    if container not in all_names:
        raise ApiError.bad_request(f"container {container} is not valid for pod {name}")
    previous = q.get("previous") in ("true", "1")
    key = (ns, name, container)
    if previous:
        if key not in store.previous_logs:
            raise ApiError.bad_request(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
    else:
        waiting = _waiting_reason(status, container)
        if waiting is not None and key not in store.logs:
            raise ApiError.bad_request(
                f'container "{container}" in pod "{name}" is waiting to start: {waiting}'
            )
    tail = query_int(q.get("tailLines"), "tailLines")
    limit_bytes = query_int(q.get("limitBytes"), "limitBytes")
    source = store.previous_logs if previous else store.logs
    with store.lock:
        text = source.get(key, "")
    out = _tail(text, tail) if tail is not None else text
    if limit_bytes is not None:
        out = out.encode()[:limit_bytes].decode(errors="ignore")
    if q.get("follow") not in ("true", "1") or previous:
        return Response(200, out, content_type="text/plain")
    sent = len(text)
    budget = None if limit_bytes is None else limit_bytes - len(out.encode())

    def stopped() -> bool:
        return stopping() or not alive()

    def gen() -> Iterator[bytes]:
        nonlocal sent, budget
        delivered = bool(out)
        if out:
            yield out.encode()
        while not stopping() and alive() and (budget is None or budget > 0):
            with store.cond:
                current = source.get(key, "")
                live = store.peek(pods, ns, name)
                done = live is None or _terminated(live, container)
                if len(current) <= sent:
                    if done:
                        return
                    store.wait_for_change(0.2, stopped=stopped, delivered=delivered)
                    delivered = False
                    continue
            chunk = current[sent:].encode()
            sent = len(current)
            if budget is not None:
                chunk = chunk[:budget]
                budget -= len(chunk)
            yield chunk
            delivered = True

    return Response(200, stream=gen(), content_type="text/plain")


def _tail(text: str, lines: int) -> str:
    if lines <= 0:
        return ""
    parts = text.splitlines(keepends=True)
    return "".join(parts[-lines:])


def _container_status(status: Obj, container: str) -> Obj | None:
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            if cs.get("name") == container:
                return dict(cs)
    return None


def _waiting_reason(status: Obj, container: str) -> str | None:
    cs = _container_status(status, container)
    if cs is None:
        return "ContainerCreating" if status.get("phase", "Pending") == "Pending" else None
    state = cs.get("state") or {}
    if (
        "waiting" in state
        and not cs.get("restartCount")
        and not (cs.get("lastState") or {}).get("terminated")
    ):
        return str(state["waiting"].get("reason") or "ContainerCreating")
    return None


def _terminated(pod: Obj, container: str) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    cs = _container_status(status, container)
    return bool(cs and "terminated" in (cs.get("state") or {}))
