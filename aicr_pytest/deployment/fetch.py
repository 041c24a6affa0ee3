"""Adapter from the cluster facade to the read-only ``fetch`` callable the deployment logic uses.

``fetch(api_version, kind, namespace, name, labels)`` returns ``[obj]``/``[]`` for a named object
and the (paginated) list otherwise; a kind the server does not serve raises
:class:`aicr_pytest.deployment.healthcheck.NotRegistered`.  Every other API error propagates (→ ``other``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aicr_pytest.deployment.healthcheck import NotRegistered
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import NotFound


class ClusterFetch:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def __call__(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str | None,
        labels: Mapping[str, str] | None,
        /,
    ) -> list[dict[str, Any]]:
        try:
            self._cluster.resolve(api_version, kind)
        except NotFound as err:
            raise NotRegistered(str(err)) from None
        if name is not None:
            obj = self._cluster.get_or_none(api_version, kind, name, namespace)
            return [obj] if obj is not None else []
        selector = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or None
        return list(self._cluster.list(api_version, kind, namespace, label_selector=selector))
