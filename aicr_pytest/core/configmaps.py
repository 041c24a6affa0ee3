"""The ConfigMap a command writes as its result (``-o cm://namespace/name``).

``aicr-pytest snapshot``, ``recipe`` and ``validate`` store their document the way AICR's ConfigMap
writer does (``pkg/serializer``): the text under ``snapshot.<format>`` plus ``format`` and
``timestamp``, labelled ``app.kubernetes.io/name``, ``component`` and ``version``.  It is the
deliverable the user asked for, so it carries no run id and no cleanup deletes it.
"""

from __future__ import annotations

from typing import Any

from aicr_pytest.core.version import __version__


def result_configmap(
    namespace: str, name: str, *, component: str, fmt: str, text: str, timestamp: str
) -> dict[str, Any]:
    """The ConfigMap object (server-side applied: created, or replaced when it exists)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "aicr-pytest",
                "app.kubernetes.io/component": component,
                "app.kubernetes.io/version": __version__,
            },
        },
        "data": {f"snapshot.{fmt}": text, "format": fmt, "timestamp": timestamp},
    }


__all__ = ["result_configmap"]
