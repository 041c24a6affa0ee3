"""Shared helpers for the facade end-to-end tests against the fake API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from aicr_pytest.kube import Cluster, RetryPolicy, connect
from aicr_pytest.kube.rbac import granted_permissions, is_granted
from aicr_pytest.testing import FakeCluster

REPO = Path(__file__).resolve().parents[2]


class RecordingSleep:
    """Records retry sleeps; advances the fake clock too (virtual time, no real sleeping)."""

    def __init__(self, fc: FakeCluster) -> None:
        self.fc = fc
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        self.fc.clock.sleep(seconds)


def facade(fc: FakeCluster, **kw: Any) -> tuple[Cluster, RecordingSleep]:
    """A facade cluster on the fake, refusing any request outside the RBAC registry."""
    sleep = RecordingSleep(fc)
    kw.setdefault("enforce_declared", True)
    cluster = connect(str(fc.kubeconfig_path), sleep=sleep, **kw)
    return cluster, sleep


def assert_rbac_covers(cluster: Cluster) -> None:
    docs = [d for d in yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text()) if d]
    granted = granted_permissions(docs)
    denied = sorted(str(p) for p in cluster.permissions.seen if not is_granted(p, granted))
    assert not denied, f"deploy/rbac.yaml does not grant: {denied}"


@contextmanager
def clock_driver(fc: FakeCluster, step: float = 0.5, interval: float = 0.002) -> Iterator[threading.Event]:
    """Advance the fake clock from a background thread while the body blocks on a watch."""
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            fc.advance(step)
            time.sleep(interval)

    thread = threading.Thread(target=run, name="clock-driver", daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(5)


def gpu_nodes(fc: FakeCluster, count: int = 2) -> None:
    from aicr_pytest.testing.simulator import NodeProfile

    fc.sim.add_nodes(NodeProfile(count=count))


FAST_RETRIES = RetryPolicy(attempts=5, initial_backoff=0.1, max_backoff=1.0, budget=10.0)
