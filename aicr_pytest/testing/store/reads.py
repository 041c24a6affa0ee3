"""Reads: get, peek, ordered iteration and paginated, selector-filtered lists (``continue`` tokens)."""

from __future__ import annotations

import base64
import bisect
import json

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from aicr_pytest.testing.store.base import _StoreBase
from aicr_pytest.testing.store.errors import ApiError
from aicr_pytest.testing.store.objects import (
    Key,
    Obj,
    clone,
)


def encode_continue(rv: int, key: Key) -> str:
    start = f"{key[0]}/{key[1]}" if key[0] else key[1]
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, Key]:
    try:
        pad = "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(token + pad))
        start = str(data["start"]).rstrip("\x00")
        rv = int(data["rv"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from exc
    if data.get("v") != "meta.k8s.io/v1":
        raise ApiError.bad_request("continue key is not valid: server does not recognize this encoded key")
    ns, _, name = start.rpartition("/")
    return rv, (ns, name)


class _Reads(_StoreBase):
    """get / peek / iter_objects / list with ``limit``/``continue`` pagination."""

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        with self.lock:
            return clone(self._present(rt, self._require(rt, namespace, name)))

    def peek(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        """The stored object itself (do not mutate) or ``None``; no copy, for controllers."""
        with self.lock:
            return self._stored(rt, namespace, name)

    def iter_objects(self, rt: ResourceType, namespace: str | None = None) -> list[Obj]:
        """Stored objects (do not mutate) in key order, optionally in one namespace."""
        with self.lock:
            table = self._table(rt)
            if namespace and rt.namespaced:
                lo, hi = table.namespace_range(namespace)
            else:
                table.ensure_sorted()
                lo, hi = 0, len(table.keys)
            return [table.objects[k] for k in table.keys[lo:hi]]

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> Obj:
        """A ``<Kind>List`` body; pages by ``limit``/``continue`` over sorted keys."""
        try:
            lsel = parse_label_selector(label_selector)
            fsel = parse_field_selector(field_selector, rt.field_labels)
        except SelectorError as exc:
            raise ApiError.bad_request(str(exc)) from exc
        if limit < 0:
            raise ApiError.bad_request("limit must be non-negative")
        with self.lock:
            table = self._table(rt)
            table.ensure_sorted()
            keys = table.keys
            if namespace and rt.namespaced:
                lo, hi = table.namespace_range(namespace)
            else:
                lo, hi = 0, len(keys)
            start = lo
            if continue_token:
                _, last = decode_continue(continue_token)
                start = max(lo, bisect.bisect_right(keys, last, lo, hi))
            items: list[Obj] = []
            objects = table.objects
            last_index = -1
            has_more = False
            for i in range(start, hi):
                obj = objects[keys[i]]
                if (lsel.empty or lsel.matches((obj.get("metadata") or {}).get("labels"))) and (
                    fsel.empty or fsel.matches(obj)
                ):
                    if limit and len(items) >= limit:
                        has_more = True
                        break
                    items.append(obj)
                    last_index = i
            meta: Obj = {"resourceVersion": str(self._rv)}
            if has_more:
                meta["continue"] = encode_continue(self._rv, keys[last_index])
                if lsel.empty and fsel.empty:
                    meta["remainingItemCount"] = hi - last_index - 1
            body = {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version,
                "metadata": meta,
                "items": [self._present(rt, o) for o in items],
            }
            return body
