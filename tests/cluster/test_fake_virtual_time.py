"""Auto-advance (virtual time) on the fake cluster: watch-based waits run in virtual time.

With ``FakeCluster(auto_advance=True)`` the fake moves its FakeClock whenever every client is
blocked in a watch: to the next simulator timer, else to the watch's ``timeoutSeconds`` deadline
(:mod:`aicr_pytest.testing.virtualtime`). Off by default; a RealClock is never auto-advanced.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from _facade_helpers import facade, gpu_nodes

from aicr_pytest.kube import WaitTimeout, wait_for_job_complete, wait_for_pod_phase
from aicr_pytest.kube.wait import wait_for_pods
from aicr_pytest.testing import FakeCluster, FakeClusterFactory
from aicr_pytest.testing.clock import FakeClock, RealClock


class FcClock:
    """A check's view of the fake's clock (like ``aicr_clock`` in the check tests)."""

    def __init__(self, fc: FakeCluster) -> None:
        self.fc = fc

    def time(self) -> float:
        return float(self.fc.clock.time())

    def sleep(self, seconds: float) -> None:
        self.fc.advance(max(0.0, seconds))


def _pod(name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
        },
    }


def _job(name: str, ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }


def test_pod_phase_wait_jumps_to_the_scripted_timeline(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    fc = aicr_fake_cluster_factory(auto_advance=True)
    gpu_nodes(fc, 1)
    fc.sim.script(name_prefix="slow-", start_after=100, run_for=200)
    cluster, _ = facade(fc)
    clock = FcClock(fc)
    start_fake = clock.time()
    cluster.create(_pod("slow-1"))
    t0 = time.monotonic()
    got = wait_for_pod_phase(cluster, "default", "slow-1", "Succeeded", timeout=600, clock=clock)
    elapsed = time.monotonic() - t0
    assert got["status"]["phase"] == "Succeeded"
    assert elapsed < 30.0, elapsed  # typically ~0.05 s: 300 virtual seconds, no real sleeping
    # exactly the scripted 300 s passed: the clock jumped timer to timer, not past the exit
    assert clock.time() - start_fake == pytest.approx(300, abs=1)
    assert fc.advancer is not None and fc.advancer.errors == []


def test_wait_that_never_finishes_times_out_at_its_deadline_quickly(
    aicr_fake_cluster_factory: FakeClusterFactory,
) -> None:
    fc = aicr_fake_cluster_factory(auto_advance=True)
    gpu_nodes(fc, 1)
    fc.sim.script(name_prefix="stuck-", start_after=1, run_for=None)
    cluster, _ = facade(fc)
    clock = FcClock(fc)
    cluster.create(_pod("stuck-1"))
    start_fake = clock.time()
    t0 = time.monotonic()
    with pytest.raises(WaitTimeout) as err:
        wait_for_pod_phase(cluster, "default", "stuck-1", "Succeeded", timeout=600, clock=clock)
    assert time.monotonic() - t0 < 30.0  # far below the virtual wait; no real sleeping
    assert "timed out after 600s waiting for pods default/stuck-1" in str(err.value)
    assert "phase Running" in str(err.value)
    # the deadline is what ended it (600 s of virtual time, windows of at most MAX_WATCH_SECONDS)
    assert 600 <= clock.time() - start_fake <= 601


def test_label_selected_wait_for_many_pods_and_a_job(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    fc = aicr_fake_cluster_factory(auto_advance=True)
    gpu_nodes(fc, 4)
    for i, after in enumerate((30, 90, 60, 240)):
        fc.sim.script(name_prefix=f"many-{i}", start_after=after, run_for=10)
    fc.sim.script(name_prefix="job-", start_after=5, run_for=500)
    cluster, _ = facade(fc)
    clock = FcClock(fc)
    start_fake = clock.time()
    for i in range(4):
        cluster.create(_pod(f"many-{i}", group="g"))
    t0 = time.monotonic()
    done = wait_for_pods(
        cluster,
        "default",
        "group=g",
        lambda p: (p.get("status") or {}).get("phase") == "Succeeded",
        count=4,
        timeout=900,
        clock=clock,
    )
    assert [p["metadata"]["name"] for p in done] == [f"many-{i}" for i in range(4)]
    assert clock.time() - start_fake == pytest.approx(250, abs=1)
    cluster.create(_job("job-x"))
    job = wait_for_job_complete(cluster, "default", "job-x", timeout=900, clock=clock)
    assert any(c["type"] == "Complete" for c in job["status"]["conditions"])
    assert time.monotonic() - t0 < 30.0  # far below the virtual wait; no real sleeping


def test_off_by_default_and_manual_advance_keeps_control(aicr_fake_cluster: FakeCluster) -> None:
    """Without auto-advance a blocked watch does not move the clock; a test that advances itself
    sees exactly the times it chose."""
    assert aicr_fake_cluster.auto_advance is False
    gpu_nodes(aicr_fake_cluster, 1)
    aicr_fake_cluster.sim.script(name_prefix="m-", start_after=50, run_for=50)
    cluster, _ = facade(aicr_fake_cluster)
    clock = FcClock(aicr_fake_cluster)
    cluster.create(_pod("m-1"))
    before = clock.time()
    result: dict[str, Any] = {}

    def waiter() -> None:
        result["pod"] = wait_for_pod_phase(cluster, "default", "m-1", "Succeeded", timeout=600, clock=clock)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.3)
    assert clock.time() == before  # nothing moved it
    aicr_fake_cluster.advance(100)
    thread.join(5)
    assert not thread.is_alive()
    assert result["pod"]["status"]["phase"] == "Succeeded"
    assert clock.time() == before + 100


def test_auto_advancing_context_and_manual_advance_together(aicr_fake_cluster: FakeCluster) -> None:
    gpu_nodes(aicr_fake_cluster, 1)
    aicr_fake_cluster.sim.script(name_prefix="c-", start_after=10, run_for=20)
    cluster, _ = facade(aicr_fake_cluster)
    clock = FcClock(aicr_fake_cluster)
    cluster.create(_pod("c-1"))
    with aicr_fake_cluster.auto_advancing():
        assert aicr_fake_cluster.auto_advance
        aicr_fake_cluster.advance(5)  # a test (or a check's sleep) may still move the clock itself
        got = wait_for_pod_phase(cluster, "default", "c-1", "Succeeded", timeout=120, clock=clock)
    assert got["status"]["phase"] == "Succeeded"
    assert aicr_fake_cluster.auto_advance is False
    assert aicr_fake_cluster.advancer is not None and not aicr_fake_cluster.advancer.running


def test_timers_alone_do_not_move_the_clock(
    aicr_fake_cluster_factory: FakeClusterFactory,
) -> None:
    """Timers alone do not move the clock: only a client blocked in a watch does."""
    fc = aicr_fake_cluster_factory(auto_advance=True)
    gpu_nodes(fc, 1)
    fc.sim.script(name_prefix="idle-", start_after=10, run_for=10)
    cluster, _ = facade(fc)
    cluster.create(_pod("idle-1"))
    before = fc.clock.time()
    time.sleep(0.2)
    assert fc.clock.time() == before
    assert fc.store.activity.busy == 0


def test_real_clock_is_never_auto_advanced(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="needs a FakeClock"):
        FakeCluster(clock=RealClock(), auto_advance=True)
    fc = FakeCluster(clock=RealClock(), kubeconfig_path=tmp_path / "kubeconfig")
    with fc:
        assert fc.auto_advance is False and fc.advancer is None
        cluster, _ = facade(fc)
        t0 = time.monotonic()
        with pytest.raises(WaitTimeout):
            wait_for_pod_phase(cluster, "default", "absent", "Running", timeout=1)
        assert time.monotonic() - t0 >= 0.9  # real time, for real


def test_advances_are_serialized_with_manual_ones() -> None:
    clock = FakeClock(start=0)
    order: list[str] = []
    clock.call_at(10, lambda: order.append("a"))
    with clock.advance_lock:
        thread = threading.Thread(target=lambda: clock.advance(20))
        thread.start()
        time.sleep(0.05)
        assert order == [] and clock.time() == 0  # the other advance waits for the lock
    thread.join(5)
    assert order == ["a"] and clock.time() == 20
    assert clock.next_timer() is None


def test_followed_log_runs_in_virtual_time(aicr_fake_cluster_factory: FakeClusterFactory) -> None:
    """A client blocked following a log is a blocked waiter too: timers that append lines fire."""
    from aicr_pytest.kube.logs import follow_log

    fc = aicr_fake_cluster_factory(auto_advance=True)
    gpu_nodes(fc, 1)
    fc.sim.script(
        name_prefix="talk-",
        start_after=5,
        run_for=400,
        log_lines=[(100, "one\n"), (200, "two\n"), (300, "three\n")],
    )
    cluster, _ = facade(fc)
    clock = FcClock(fc)
    created = clock.time()
    cluster.create(_pod("talk-1"))
    wait_for_pod_phase(cluster, "default", "talk-1", "Running", timeout=60, clock=clock)
    t0 = time.monotonic()
    lines = list(follow_log(cluster, "default", "talk-1", "main"))
    assert lines == ["one", "two", "three"]
    # the follow ends when the pod does: started 5 s after its creation, ran 400 s (measured from
    # the creation, not from when the wait saw Running: under load virtual time may run ahead there)
    assert clock.time() - created == pytest.approx(405, abs=1)
    assert time.monotonic() - t0 < 30.0  # far below the virtual wait; no real sleeping


def test_a_slow_client_handling_an_event_is_not_taken_for_a_blocked_one(
    aicr_fake_cluster_factory: FakeClusterFactory,
) -> None:
    """The clock must not jump while an in-process client still holds the event it was streamed,
    however long it takes (a loaded machine): only once it is back in its read."""
    from aicr_pytest.kube import client as kube_client
    from aicr_pytest.kube.wait import wait_for

    fc = aicr_fake_cluster_factory(auto_advance=True)
    gpu_nodes(fc, 1)
    fc.sim.script(name_prefix="slow-", start_after=5, run_for=400)
    cluster, _ = facade(fc)
    clock = FcClock(fc)
    created = clock.time()
    cluster.create(_pod("slow-1"))
    held: list[int] = []

    def running_handled_slowly(pod: dict[str, Any]) -> bool:
        if (pod.get("status") or {}).get("phase") != "Running":
            return False
        held.append(kube_client.streams_in_hand())
        time.sleep(0.3)  # 30x the settle time, with the watch still open and its event in hand
        return True

    wait_for(cluster, "v1", "pods", "slow-1", "default", running_handled_slowly, 600, clock)
    assert held and held[0] >= 1  # the event came off a stream and was counted as in hand
    assert clock.time() - created == pytest.approx(5, abs=1)  # not the exit at 405, no deadline
    assert kube_client.streams_in_hand() == 0
