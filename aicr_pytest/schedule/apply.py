"""``aicr-pytest schedule``: apply the rendered objects, or delete them (cluster I/O).

:func:`apply` sends each object with server-side apply (field manager ``aicr-pytest``), in the
order :func:`~.render.render` gives; applying the same objects again changes nothing (the API
server keeps each object's ``resourceVersion``).  It returns one line per object, saying whether
it was created, changed or unchanged.

:func:`delete` removes what a schedule in the namespace created, and only that: each candidate of
:func:`~.render.deletable` is read first and deleted only when its labels say the schedule made it
(an object of the same name that someone else made is left, and said so).  The CronJob goes with
its Jobs and pods (background propagation); the Namespace last, with what the runs stored in it
(the history and CTRF ConfigMaps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import NotFound
from aicr_pytest.schedule.render import deletable, ours


def _ref(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


def apply(cluster: Cluster, objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Server-side apply every object; a line per object (``created``, ``configured``, ``unchanged``)."""
    lines: list[str] = []
    for obj in objects:
        meta = obj["metadata"]
        before = cluster.get_or_none(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        after = cluster.apply(obj)
        if before is None:
            state = "created"
        elif (before.get("metadata") or {}).get("resourceVersion") == (after.get("metadata") or {}).get(
            "resourceVersion"
        ):
            state = "unchanged"
        else:
            state = "configured"
        lines.append(f"{_ref(obj)} {state}")
    return lines


def delete(cluster: Cluster, namespace: str) -> list[str]:
    """Delete what the schedule in ``namespace`` created; a line per object found."""
    lines: list[str] = []
    for api_version, kind, name, ns in deletable(namespace):
        obj = cluster.get_or_none(api_version, kind, name, ns)
        if obj is None:
            continue
        ref = f"{kind} {ns + '/' if ns else ''}{name}"
        if not ours(obj, namespace):
            lines.append(f"{ref} left alone (not created by aicr-pytest schedule)")
            continue
        try:
            cluster.delete(api_version, kind, name, ns, propagation="Background")
        except NotFound:
            continue
        lines.append(f"{ref} deleted")
    return lines


__all__ = ["apply", "delete"]
