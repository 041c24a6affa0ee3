"""Hands the running FakeCluster's clock to checks executed by in-process pytester runs."""

from __future__ import annotations

from typing import Any


class ClusterClock:
    """``time()``/``sleep()`` over a FakeCluster's clock: sleeping advances the simulation."""

    def __init__(self, cluster: Any) -> None:
        self._cluster = cluster

    def time(self) -> float:
        return float(self._cluster.clock.time())

    def sleep(self, seconds: float) -> None:
        self._cluster.advance(max(seconds, 0.0))


CURRENT: list[Any] = []
