"""core.progress: clock-driven "waiting for …; … left" lines, and the waits that feed them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _kube_stub import Call, Reply, StepClock, make_cluster, obj_meta

from aicr_pytest.core import progress
from aicr_pytest.deployment import expected_resources as d
from aicr_pytest.kube import WaitTimeout, wait_for_pod_phase


@pytest.fixture
def sink() -> Iterator[list[str]]:
    lines: list[str] = []
    previous = progress.install(lines.append)
    try:
        yield lines
    finally:
        progress.install(previous)


def test_a_line_every_ten_seconds_with_time_left(sink: list[str]) -> None:
    clock = StepClock(0.0)
    waiting = progress.Waiting("pods ns/p to succeed", clock=clock, deadline=300.0)
    seen = []
    for _ in range(25):  # one turn per second for 25 s
        clock.sleep(1.0)
        seen.append(waiting.tick("phase=Pending"))
    assert sink == [
        "waiting for pods ns/p to succeed: phase=Pending; 4m50s left",
        "waiting for pods ns/p to succeed: phase=Pending; 4m40s left",
    ]
    assert [i + 1 for i, due in enumerate(seen) if due] == [10, 20]


def test_short_wait_is_silent_and_state_is_lazy(sink: list[str]) -> None:
    clock = StepClock(0.0)
    waiting = progress.Waiting("x", clock=clock)
    calls = []

    def state() -> str:
        calls.append(1)
        return "busy"

    clock.sleep(9.9)
    assert not waiting.tick(state)
    assert sink == [] and calls == []
    clock.sleep(0.1)
    assert waiting.tick(state)
    assert sink == ["waiting for x: busy; 10s so far"] and calls == [1]


def test_without_a_sink_nothing_is_written() -> None:
    assert not progress.active()
    clock = StepClock(0.0)
    waiting = progress.Waiting("x", clock=clock, deadline=20.0)
    clock.sleep(11)
    assert waiting.tick()  # due, and dropped
    own: list[str] = []
    explicit = progress.Waiting("y", clock=clock, deadline=30.0, sink=own.append)
    clock.sleep(10)
    explicit.tick()
    assert own == ["waiting for y; 9s left"]


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (-3, "0s"), (9.2, "10s"), (60, "1m0s"), (290, "4m50s"), (3605, "1h0m5s")]
)
def test_format_left(seconds: float, text: str) -> None:
    assert progress.format_left(seconds) == text


def test_readiness_dwell_reports_while_it_holds(sink: list[str]) -> None:
    clock = StepClock(0.0)
    signals = [d.ReadinessSignal("gpu-operator", lambda: d.ProbeResult(None))]
    outcomes = d.wait_for_readiness_signals(signals, clock=clock, dwell=60, interval=5, window=600)
    assert [o.ok for o in outcomes] == [True]
    assert len(sink) == 5  # 10 s … 50 s; at 60 s it holds and the wait ends
    assert sink[0] == (
        "waiting for readiness signals to hold for 1m0s: gpu-operator healthy 10s/1m0s; 9m50s left"
    )
    assert sink[-1].endswith("gpu-operator healthy 50s/1m0s; 9m10s left")


def test_watch_wait_reports_and_keeps_watch_windows_short(sink: list[str]) -> None:
    calls: list[Call] = []

    def handler(call: Call) -> Reply:
        calls.append(call)
        if call.query.get("watch") == "true":
            return Reply(200, lines=[])  # the stream ends at once: the waiter backs off on the clock
        pod = {"kind": "Pod", "metadata": obj_meta("p", "ns", "5"), "status": {"phase": "Pending"}}
        return Reply(200, {"metadata": {"resourceVersion": "5"}, "items": [pod]})

    cluster, _, _ = make_cluster(handler)
    with pytest.raises(WaitTimeout):
        wait_for_pod_phase(cluster, "ns", "p", "Succeeded", timeout=35, clock=StepClock(0.0))
    windows = {int(c.query["timeoutSeconds"]) for c in calls if c.query.get("watch") == "true"}
    assert windows and max(windows) <= 10
    assert len(sink) >= 3
    assert all(line.startswith("waiting for pods ns/p: phase Pending (phase=Pending); ") for line in sink)
    lefts = [int(line.rsplit("; ", 1)[1].removesuffix("s left")) for line in sink]
    assert lefts == sorted(lefts, reverse=True) and lefts[0] <= 25
