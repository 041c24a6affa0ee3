"""Waits built on watch: list once for a ``resourceVersion``, then watch from it.

The loop follows client-go's reflector: list (getting the collection's ``resourceVersion``),
watch from that version, resume from the last seen version when a stream ends (server timeout,
dropped connection), and re-list when the server answers 410 Gone (the version was compacted).
Deadlines come from an injectable clock; a waiter never polls. The server is asked to end each
watch at the deadline (``timeoutSeconds``), and when the clock supports listeners (the fake
clock does) the stream is shut down the moment virtual time passes the deadline. On the fake
cluster with auto-advance (:mod:`aicr_pytest.testing.virtualtime`) the fake moves its clock while
the watch blocks, so a wait runs in virtual time.

A caller that reports progress passes ``progress`` (and ``progress_every``): each watch request
then lasts at most ``progress_every`` seconds, and ``progress(view)`` is called after the first
list and between watch windows -- a long wait says what it waits for at that cadence, without
ever polling the object.  Independently, every wait here feeds :mod:`aicr_pytest.core.progress`:
while a progress sink is installed (a run of the plugin), a wait longer than 10 s prints
``waiting for <what>: <state>; <time> left`` at least every 10 s.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from aicr_pytest.core import progress as progress_lines
from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.client import Cluster, WatchStream
from aicr_pytest.kube.errors import MSG_VANISHED, MSG_WAIT_TIMEOUT, Gone, ObjectVanished, WaitTimeout

JSON = dict[str, Any]
T = TypeVar("T")
Predicate = Callable[[JSON], "bool | str"]

#: Longest single watch request; a longer wait resumes with a new one.
MAX_WATCH_SECONDS = 300
_TERMINAL_POD_PHASES = ("Succeeded", "Failed")


def summarize(obj: JSON | None) -> str:
    """A one-line state summary for timeout messages (pods, Jobs, anything with conditions)."""
    if obj is None:
        return "not seen yet"
    kind = obj.get("kind", "")
    status = obj.get("status") or {}
    parts: list[str] = []
    if status.get("phase"):
        parts.append(f"phase={status['phase']}")
    if kind == "Job":
        for key in ("active", "succeeded", "failed"):
            if status.get(key):
                parts.append(f"{key}={status[key]}")
    for cond in status.get("conditions") or []:
        if kind == "Pod" and cond.get("status") == "True":
            continue
        text = f"{cond.get('type')}={cond.get('status')}"
        if cond.get("reason"):
            text += f"({cond['reason']}"
            text += f": {cond['message']})" if cond.get("message") else ")"
        parts.append(text)
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        for name, detail in state.items():
            detail = detail or {}
            reason = detail.get("reason", "")
            code = detail.get("exitCode")
            extra = f" exit {code}" if code is not None else ""
            parts.append(f"container {cs.get('name')}: {name}{' ' + reason if reason else ''}{extra}")
    return ", ".join(parts) or "no status"


class _Deadline:
    def __init__(self, clock: Clock, timeout: float) -> None:
        self.clock = clock
        self.timeout = timeout
        self.end = clock.time() + timeout

    def remaining(self) -> float:
        return self.end - self.clock.time()

    def expired(self) -> bool:
        return self.remaining() <= 0


class _StreamGuard:
    """Shuts the current watch down when a listener-capable clock passes the deadline."""

    def __init__(self, deadline: _Deadline) -> None:
        self.deadline = deadline
        self.current: WatchStream | None = None
        self.active = True
        self._lock = threading.Lock()
        add_listener = getattr(deadline.clock, "add_listener", None)
        if callable(add_listener):
            add_listener(self._on_tick)

    def _on_tick(self) -> None:
        with self._lock:
            stream = self.current if self.active else None
        if stream is not None and self.deadline.expired():
            stream.shutdown()

    def set(self, stream: WatchStream | None) -> None:
        with self._lock:
            self.current = stream

    def retire(self) -> None:
        with self._lock:
            self.active = False
            self.current = None


def _key(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def observe(
    cluster: Cluster,
    api_version: str,
    kind: str,
    namespace: str | None,
    check: Callable[[dict[str, JSON]], T | None],
    *,
    timeout: float,
    clock: Clock = SYSTEM_CLOCK,
    what: str,
    describe: Callable[[dict[str, JSON]], str],
    label_selector: str | None = None,
    field_selector: str | None = None,
    progress: Callable[[dict[str, JSON]], None] | None = None,
    progress_every: float | None = None,
) -> T:
    """Keep a watched view of the matching objects and return the first non-None ``check(view)``.

    ``check`` may raise to stop early. On the deadline raises :class:`WaitTimeout` with
    ``describe(view)``. ``progress(view)``, when given, is called after the first list and
    between watch windows, which last at most ``progress_every`` seconds (default
    :data:`MAX_WATCH_SECONDS`).
    """
    window = MAX_WATCH_SECONDS
    if progress_every is not None:
        window = max(1, min(MAX_WATCH_SECONDS, math.ceil(progress_every)))
    if progress_lines.active():  # someone reads progress lines: a turn at least every 10 s
        window = min(window, math.ceil(progress_lines.EVERY_S))
    waiting = progress_lines.Waiting(what, clock=clock, deadline=clock.time() + timeout)
    deadline = _Deadline(clock, timeout)
    guard = _StreamGuard(deadline)
    view: dict[str, JSON] = {}
    version: str | None = None
    quick_empty = 0

    def timed_out() -> WaitTimeout:
        return WaitTimeout(
            MSG_WAIT_TIMEOUT.format(timeout=timeout, what=what, state=describe(view)),
            last_seen=dict(view),
        )

    try:
        while True:
            if version is None:
                items, version = cluster.list_with_version(
                    api_version,
                    kind,
                    namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                )
                view = {_key(o): o for o in items}
                result = check(view)
                if result is not None:
                    return result
            remaining = deadline.remaining()
            if remaining <= 0:
                raise timed_out()
            if progress is not None:
                progress(view)
            waiting.tick(functools.partial(describe, view))
            started = time.monotonic()
            events = 0
            try:
                stream = cluster.watch(
                    api_version,
                    kind,
                    namespace,
                    resource_version=version or None,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    timeout_seconds=min(window, max(1, math.ceil(remaining))),
                )
                guard.set(stream)
                with stream:
                    for event in stream:
                        events += 1
                        obj = event.get("object") or {}
                        new_version = (obj.get("metadata") or {}).get("resourceVersion")
                        kind_of_event = event.get("type")
                        if kind_of_event == "BOOKMARK":
                            version = new_version or version
                            continue
                        if kind_of_event == "DELETED":
                            view.pop(_key(obj), None)
                        elif kind_of_event in ("ADDED", "MODIFIED"):
                            view[_key(obj)] = obj
                        version = new_version or version
                        result = check(view)
                        if result is not None:
                            return result
                        if deadline.expired():
                            raise timed_out()
                        waiting.tick(functools.partial(describe, view))
            except Gone:
                version = None  # compacted: re-list (falls through to the anti-spin backoff)
            finally:
                guard.set(None)
            if deadline.expired():
                raise timed_out()
            # A stream that ends at once with nothing in it (dropped connection) must not spin.
            if events == 0 and time.monotonic() - started < 1.0:
                quick_empty += 1
                if quick_empty >= 2:
                    clock.sleep(min(2.0, 0.05 * 2 ** (quick_empty - 2), max(0.0, deadline.remaining())))
            else:
                quick_empty = 0
    finally:
        guard.retire()


#: how :func:`await_pod_outcomes` says a pod left the view or outlived the wait
POD_VANISHED = "vanished"
POD_TIMEOUT = "timeout"


def await_pod_outcomes(
    cluster: Cluster,
    namespace: str,
    names: Collection[str],
    outcome_of: Callable[[JSON], str | None],
    *,
    selector: str,
    timeout: float,
    clock: Clock,
    what: str,
    noun: str,
) -> dict[str, tuple[str, JSON | None]]:
    """Wait for each of the pods ``names`` (in ``namespace``, all matched by ``selector``) to end.

    One watch answers for all of them.  A pod ends with ``outcome_of(pod)`` when that is not
    ``None``, with :data:`POD_VANISHED` when it leaves the watched view, and with
    :data:`POD_TIMEOUT` when the deadline passes first.  Returns name → (outcome, the pod as last
    seen, ``None`` if never).
    """
    waiting = set(names)
    last: dict[str, JSON | None] = dict.fromkeys(names)
    ended: dict[str, tuple[str, JSON | None]] = {}
    if not waiting:
        return ended

    def settle(view: dict[str, JSON]) -> bool | None:
        current = {str((p.get("metadata") or {}).get("name")): p for p in view.values()}
        for name in sorted(waiting):
            pod = current.get(name)
            outcome = POD_VANISHED if pod is None else outcome_of(pod)
            if pod is not None:
                last[name] = pod
            if outcome is not None:
                ended[name] = (outcome, last[name])
                waiting.discard(name)
        return True if not waiting else None

    try:
        observe(
            cluster,
            "v1",
            "pods",
            namespace,
            settle,
            timeout=timeout,
            clock=clock,
            what=what,
            describe=lambda view: f"{len(waiting)} of {len(names)} {noun} still running",
            label_selector=selector,
        )
    except WaitTimeout:
        ended.update({name: (POD_TIMEOUT, last[name]) for name in waiting})
    return ended


def wait_for(
    cluster: Cluster,
    api_version: str,
    plural_or_kind: str,
    name: str,
    namespace: str | None,
    predicate: Predicate,
    timeout: float,
    clock: Clock = SYSTEM_CLOCK,
    *,
    progress: Callable[[JSON | None], None] | None = None,
    progress_every: float | None = None,
) -> JSON:
    """Wait until ``predicate(obj)`` is ``True`` for the named object and return the object.

    ``predicate`` returns ``True`` when done; anything else means "not yet" — a ``str`` return
    describes the current state and is quoted in the timeout message. To give up early (the object
    reached a state from which the condition cannot hold) the predicate raises. An object that
    does not exist yet is waited for; one that is deleted while waiting raises
    :class:`ObjectVanished`. ``progress(obj or None)`` is called at least every
    ``progress_every`` seconds while waiting (see :func:`observe`).
    """
    where = f"{namespace}/{name}" if namespace else name
    what = f"{plural_or_kind} {where}"
    key = f"{namespace or ''}/{name}"
    seen = False
    last_note = ""

    def check(view: dict[str, JSON]) -> JSON | None:
        nonlocal seen, last_note
        obj = view.get(key)
        if obj is None:
            if seen:
                raise ObjectVanished(MSG_VANISHED.format(what=what))
            return None
        seen = True
        verdict = predicate(obj)
        if verdict is True:
            return obj
        last_note = verdict if isinstance(verdict, str) else ""
        return None

    def describe(view: dict[str, JSON]) -> str:
        state = summarize(view.get(key))
        return f"{last_note} ({state})" if last_note else state

    def report(view: dict[str, JSON]) -> None:
        if progress is not None:
            progress(view.get(key))

    return observe(
        cluster,
        api_version,
        plural_or_kind,
        namespace,
        check,
        timeout=timeout,
        clock=clock,
        what=what,
        describe=describe,
        field_selector=f"metadata.name={name}",
        progress=report if progress is not None else None,
        progress_every=progress_every,
    )


def wait_for_pod_phase(
    cluster: Cluster,
    namespace: str,
    name: str,
    phases: Collection[str] | str = ("Running", "Succeeded"),
    timeout: float = 300.0,
    clock: Clock = SYSTEM_CLOCK,
) -> JSON:
    """Wait until the pod's phase is one of ``phases``; a terminal phase outside them is Inconclusive."""
    wanted = (phases,) if isinstance(phases, str) else tuple(phases)

    def predicate(pod: JSON) -> bool | str:
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase in wanted:
            return True
        if phase in _TERMINAL_POD_PHASES:
            raise Inconclusive(
                f"pod {namespace}/{name} ended in phase {phase} while waiting for "
                f"{'/'.join(wanted)}: {summarize(pod)}"
            )
        return f"phase {phase}"

    return wait_for(cluster, "v1", "pods", name, namespace, predicate, timeout, clock)


def job_outcome(job: JSON) -> str | None:
    """``"Complete"`` or ``"Failed"`` once the Job has that condition set to True, else None."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def wait_for_job_complete(
    cluster: Cluster,
    namespace: str,
    name: str,
    timeout: float = 600.0,
    clock: Clock = SYSTEM_CLOCK,
) -> JSON:
    """Wait for the Job's ``Complete`` or ``Failed`` condition; return the Job (see :func:`job_outcome`)."""

    def predicate(job: JSON) -> bool:
        return job_outcome(job) is not None

    return wait_for(cluster, "batch/v1", "jobs", name, namespace, predicate, timeout, clock)


def wait_for_pods(
    cluster: Cluster,
    namespace: str | None,
    label_selector: str,
    predicate: Callable[[JSON], bool],
    count: int,
    timeout: float = 300.0,
    clock: Clock = SYSTEM_CLOCK,
) -> list[JSON]:
    """Wait until at least ``count`` pods matching ``label_selector`` satisfy ``predicate``.

    Returns the matching pods sorted by namespace/name.
    """

    def check(view: dict[str, JSON]) -> list[JSON] | None:
        good = [pod for _, pod in sorted(view.items()) if predicate(pod)]
        return good if len(good) >= count else None

    def describe(view: dict[str, JSON]) -> str:
        good = sum(1 for pod in view.values() if predicate(pod))
        phases = sorted({str((p.get("status") or {}).get("phase", "Pending")) for p in view.values()})
        return f"{good}/{count} ready of {len(view)} pods (phases: {', '.join(phases) or 'none'})"

    return observe(
        cluster,
        "v1",
        "pods",
        namespace,
        check,
        timeout=timeout,
        clock=clock,
        what=f"{count} pods matching {label_selector}",
        describe=describe,
        label_selector=label_selector,
    )


def wait_deleted(
    cluster: Cluster,
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None,
    timeout: float,
    clock: Clock = SYSTEM_CLOCK,
) -> None:
    """Wait until the named object no longer exists."""
    key = f"{namespace or ''}/{name}"
    where = f"{namespace}/{name}" if namespace else name

    def check(view: dict[str, JSON]) -> bool | None:
        return True if key not in view else None

    def describe(view: dict[str, JSON]) -> str:
        obj = view.get(key)
        if obj is None:
            return "gone"
        meta = obj.get("metadata") or {}
        finalizers = ", ".join(meta.get("finalizers") or []) or "none"
        return f"still present (deletionTimestamp={meta.get('deletionTimestamp')}, finalizers: {finalizers})"

    observe(
        cluster,
        api_version,
        kind,
        namespace,
        check,
        timeout=timeout,
        clock=clock,
        what=f"deletion of {kind} {where}",
        describe=describe,
        field_selector=f"metadata.name={name}",
    )


__all__ = [
    "MAX_WATCH_SECONDS",
    "POD_TIMEOUT",
    "POD_VANISHED",
    "await_pod_outcomes",
    "job_outcome",
    "observe",
    "summarize",
    "wait_deleted",
    "wait_for",
    "wait_for_job_complete",
    "wait_for_pod_phase",
    "wait_for_pods",
]
