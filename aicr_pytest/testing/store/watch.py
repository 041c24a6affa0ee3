"""Container logs and watches: replay from a ``resourceVersion``, ``410 Gone``, selector transitions."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from aicr_pytest.testing.store.errors import ApiError
from aicr_pytest.testing.store.objects import (
    Obj,
    WatchEvent,
)
from aicr_pytest.testing.store.writes import _Writes


class _Watch(_Writes):
    """Container logs and watch streams (history replay, ``410 Gone``, selector transitions)."""

    # -------------------------------------------------------------------------------- logs --
    def append_log(
        self, namespace: str, pod: str, container: str, text: str, *, previous: bool = False
    ) -> None:
        with self.lock:
            target = self.previous_logs if previous else self.logs
            key = (namespace, pod, container)
            target[key] = target.get(key, "") + text
            self._log_writes += 1
            self.cond.notify_all()

    def set_log(self, namespace: str, pod: str, container: str, text: str, *, previous: bool = False) -> None:
        with self.lock:
            (self.previous_logs if previous else self.logs)[(namespace, pod, container)] = text
            self._log_writes += 1
            self.cond.notify_all()

    # ------------------------------------------------------------------------------- watch --
    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: float | None = None,
        stopped: Callable[[], bool] = lambda: False,
        poll: float = 0.2,
    ) -> Iterator[Obj]:
        """Yield watch events (``{"type": ..., "object": ...}``) until the timeout or ``stopped()``.

        The timeout is honoured on both the store's clock (so advancing a FakeClock ends a watch
        deterministically) and the wall clock (so a watch never outlives its ``timeoutSeconds``).
        """
        try:
            lsel = parse_label_selector(label_selector)
            fsel = parse_field_selector(field_selector, rt.field_labels)
        except SelectorError as exc:
            raise ApiError.bad_request(str(exc)) from exc
        ns = namespace if (namespace and rt.namespaced) else None
        initial: list[Obj] = []
        with self.lock:
            if resource_version in (None, "", "0"):
                pos = self._rv
                for obj in self.iter_objects(rt, ns):
                    if self._matches(obj, lsel, fsel):
                        initial.append({"type": "ADDED", "object": self._present(rt, obj)})
            else:
                try:
                    pos = int(str(resource_version))
                except ValueError as exc:
                    raise ApiError.bad_request(f"invalid resource version: {resource_version}") from exc
            fake_deadline = self.clock.time() + timeout_seconds if timeout_seconds else None
        real_deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
        yield from initial
        delivered = bool(initial)
        while not stopped():
            out: list[Obj] = []
            finished = False
            with self.lock:
                if pos < self._compacted_rv:
                    out.append(self.expired_event(pos))
                    finished = True
                else:
                    idx = bisect.bisect_right(self._history, pos, key=lambda e: e.rv)
                    fake_expired = False
                    for ev in self._history[idx:]:
                        if fake_deadline is not None and ev.at > fake_deadline:
                            fake_expired = True
                            break
                        pos = ev.rv
                        if ev.storage_key != rt.storage_key or (ns is not None and ev.namespace != ns):
                            continue
                        translated = self._translate(ev, lsel, fsel)
                        if translated is not None:
                            out.append({"type": translated, "object": self._present(rt, ev.obj)})
                    if not out:
                        if fake_expired or (fake_deadline is not None and self.clock.time() >= fake_deadline):
                            return
                        if real_deadline is not None and time.monotonic() >= real_deadline:
                            return
                        left = poll if real_deadline is None else min(poll, real_deadline - time.monotonic())
                        self.wait_for_change(
                            left, deadline=fake_deadline, stopped=stopped, delivered=delivered
                        )
                        delivered = False
                        continue
            yield from out
            delivered = True
            if finished:
                return

    def expired_event(self, rv: int) -> Obj:
        err = ApiError.gone(f"too old resource version: {rv} ({self._compacted_rv + 1})")
        return {"type": "ERROR", "object": err.status()}

    @staticmethod
    def _matches(obj: Obj | None, lsel: LabelSelector, fsel: FieldSelector) -> bool:
        if obj is None:
            return False
        return (lsel.empty or lsel.matches((obj.get("metadata") or {}).get("labels"))) and (
            fsel.empty or fsel.matches(obj)
        )

    def _translate(self, ev: WatchEvent, lsel: LabelSelector, fsel: FieldSelector) -> str | None:
        if ev.type != "MODIFIED" or (lsel.empty and fsel.empty):
            return ev.type if self._matches(ev.obj, lsel, fsel) else None
        was, now = self._matches(ev.old, lsel, fsel), self._matches(ev.obj, lsel, fsel)
        if was and now:
            return "MODIFIED"
        if now:
            return "ADDED"
        if was:
            return "DELETED"
        return None
