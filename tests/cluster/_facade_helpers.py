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
from tests.harness.backends import K8sBackend

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


class BackendSleep:
    """Records retry sleeps; lets that much time pass on the backend (virtual on the fake)."""

    def __init__(self, backend: K8sBackend) -> None:
        self.backend = backend
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        self.backend.clock.sleep(seconds)


def backend_facade(backend: K8sBackend, *, admin: bool = False, **kw: Any) -> tuple[Cluster, BackendSleep]:
    """A facade on ``backend`` as the least-privilege user (``admin=True``: the admin kubeconfig),
    refusing any request outside the RBAC registry; on the control plane the apiserver's RBAC also
    judges every request against ``deploy/rbac.yaml``."""
    sleep = BackendSleep(backend)
    kw.setdefault("enforce_declared", True)
    path = backend.kubeconfig_path if admin else backend.restricted_kubeconfig_path
    cluster = connect(str(path), sleep=sleep, **kw)
    return cluster, sleep


def fake_of(backend: K8sBackend) -> FakeCluster:
    """The FakeCluster behind a fake-only scenario's backend."""
    from tests.harness.backends import FakeBackend

    assert isinstance(backend, FakeBackend), "a fake-only scenario ran on another backend"
    return backend.fake


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
