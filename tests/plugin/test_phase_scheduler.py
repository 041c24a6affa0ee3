"""Under xdist the phases keep their order through the scheduler: a later phase's check starts only
after every check of the earlier phases finished, with parallelism inside a phase.

The unit tests drive :class:`~aicr_pytest.plugin.phasesched.PhaseScheduling` with simulated xdist
workers that behave as ``xdist/remote.py`` does (an item starts once the worker holds the next one
or was told to shut down); the pytester test runs real checks under ``-n 2``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from aicr_pytest.plugin import phasesched
from aicr_pytest.plugin.phasesched import PhaseScheduling, phase_ranks
from tests.plugin.helpers import make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]
PHASES = ["deployment", "performance", "conformance"]


class Worker:
    """An xdist worker as the scheduler sees it, and as ``remote.py`` runs its queue."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.queue: list[int] = []
        self.pos = 0
        self.running: int | None = None
        self.shutting_down = False

    def send_runtest_some(self, indices: Sequence[int]) -> None:
        assert not self.shutting_down
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def may_start(self) -> bool:
        """The next item starts once the worker holds the one after it, or was told to stop."""
        if self.running is not None or self.pos >= len(self.queue):
            return False
        return self.pos + 1 < len(self.queue) or self.shutting_down


def simulate(plan: list[str | None], workers: int, seed: int) -> list[tuple[str, int]]:
    """Run ``plan`` on ``workers`` simulated workers finishing items in a random order; the
    start/finish events.  Fails on a start that breaks the phase order, or on a hang."""
    rng = random.Random(seed)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    sched = PhaseScheduling(
        cast(pytest.Config, None), numnodes=workers, phases=PHASES, plan=lambda node: plan
    )
    collection = [f"test_x.py::test_{i}" for i in range(len(plan))]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    done: set[int] = set()
    events: list[tuple[str, int]] = []
    while len(done) < len(plan):
        for node in nodes:
            if node.may_start():
                index = node.queue[node.pos]
                phase = plan[index]
                if phase is not None:
                    earlier = {
                        i
                        for i, p in enumerate(plan)
                        if p is not None and PHASES.index(p) < PHASES.index(phase)
                    }
                    assert earlier <= done, f"item {index} ({phase}) started before {sorted(earlier - done)}"
                node.running = index
                events.append(("start", index))
        running = [n for n in nodes if n.running is not None]
        assert running, f"hang: nothing runs, {sorted(set(range(len(plan))) - done)} never finished"
        node = rng.choice(running)
        index = cast(int, node.running)
        node.running, node.pos = None, node.pos + 1
        done.add(index)
        events.append(("finish", index))
        sched.mark_test_complete(cast(Any, node), index)
        if sched.tests_finished:
            for n in nodes:
                n.shutdown()
    assert sorted(i for e, i in events if e == "start") == list(range(len(plan)))  # each ran once
    return events


PLAN: list[str | None] = [
    "deployment", "deployment", "deployment", "deployment",
    "performance",
    "conformance", "conformance", "conformance",
    None, None,
]  # fmt: skip


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(20))
def test_a_later_phase_starts_only_after_the_earlier_phases(workers: int, seed: int) -> None:
    simulate(PLAN, workers, seed)


def test_checks_of_one_phase_run_side_by_side() -> None:
    events = simulate(PLAN, 2, seed=0)
    running: set[int] = set()
    overlap = False
    for event, index in events:
        if event == "start":
            overlap |= any(PLAN[i] == PLAN[index] == "deployment" for i in running)
            running.add(index)
        else:
            running.discard(index)
    assert overlap


def test_a_short_phase_is_spread_over_every_worker() -> None:
    """Six checks of one phase on four workers: four start before any finishes (as ``load``)."""
    events = simulate(["conformance"] * 6, 4, seed=3)
    assert [e for e, _ in events[:5]] == ["start"] * 4 + ["finish"]


def test_a_crashed_worker_s_items_run_elsewhere_and_the_run_ends() -> None:
    plan: list[str | None] = ["deployment"] * 4 + ["conformance"] * 2
    nodes = [Worker("gw0"), Worker("gw1")]
    sched = PhaseScheduling(cast(pytest.Config, None), numnodes=2, phases=PHASES, plan=lambda node: plan)
    collection = [f"t.py::test_{i}" for i in range(len(plan))]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    crashed, other = nodes
    assert crashed.queue[:1] == [0]
    assert sched.remove_node(cast(Any, crashed)) == collection[0]  # xdist reports it as crashed
    # the survivor gets the rest, conformance only after the last deployment check finished
    ran: list[int] = []
    while not sched.tests_finished or other.pos < len(other.queue):
        assert other.may_start(), f"hang: holds {other.queue[other.pos :]}, pending {sched.pending}"
        index = other.queue[other.pos]
        if plan[index] == "conformance":
            assert {1, 2, 3} <= set(ran)
        ran.append(index)
        other.pos += 1
        sched.mark_test_complete(cast(Any, other), index)
    assert sorted(ran) == [1, 2, 3, 4, 5]


def test_without_the_rule_the_simulation_catches_an_early_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: xdist's load order alone starts a later phase too early."""
    monkeypatch.setattr(phasesched.PhaseScheduling, "allowed", lambda self, index: True)
    failures = 0
    for seed in range(20):
        try:
            simulate(PLAN, 2, seed)
        except AssertionError as err:
            assert "started before" in str(err)
            failures += 1
    assert failures > 0


def test_phase_ranks() -> None:
    assert phase_ranks(["deployment", None, "conformance"], PHASES, 3) == [0, None, 2]
    # no plan, a plan of another length or with an unknown phase: each item waits for all before it
    assert phase_ranks(None, PHASES, 3) == [0, 1, 2]
    assert phase_ranks(["deployment"], PHASES, 3) == [0, 1, 2]
    assert phase_ranks(["deployment", "nope", None], PHASES, 3) == [0, 1, 2]


def test_without_a_plan_the_items_run_one_after_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phasesched, "phase_ranks", lambda plan, phases, size: list(range(size)))
    events = simulate(["deployment"] * 6, 3, seed=1)
    # each item starts after the one before it finished: nothing ever runs side by side
    assert events == [(e, i) for i in range(6) for e in ("start", "finish")]


#: checks that log when they start and finish; the first deployment check watches, for a moment,
#: whether the conformance check starts while it still runs
TIMED_CHECKS = """
import json, os, time
from pathlib import Path

import pytest

LOG = Path(__file__).parent / "events.jsonl"
MARK = Path(__file__).parent / "conformance-started"

def log(name, event):
    with LOG.open("a") as f:
        f.write(json.dumps({"name": name, "event": event, "t": time.monotonic(), "pid": os.getpid()}) + "\\n")

@pytest.mark.check("operator-health")
def test_slow(aicr_check):
    log("operator-health", "start")
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline and not MARK.exists():
        time.sleep(0.02)
    seen = MARK.exists()
    log("operator-health", "end")
    assert not seen, "a conformance check started while a deployment check ran"

@pytest.mark.check("expected-resources")
def test_quick(aicr_check):
    log("expected-resources", "start")
    log("expected-resources", "end")

@pytest.mark.check("gpu-operator-version")
def test_quick_too(aicr_check):
    log("gpu-operator-version", "start")
    log("gpu-operator-version", "end")

@pytest.mark.check("dra-support")
def test_later(aicr_check):
    MARK.write_text("x")
    log("dra-support", "start")
    log("dra-support", "end")
"""


def test_under_xdist_a_later_phase_waits_for_the_last_check_of_the_earlier_one(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    pytester.makepyfile(test_user=TIMED_CHECKS)
    rp, sp = write_inputs(
        make_recipe(
            deployment=["operator-health", "expected-resources", "gpu-operator-version"],
            conformance=["dra-support"],
        )
    )
    out = pytester.path / "ctrf.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "test_user.py", "--aicr-no-bundled-checks",
        "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out),
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    events = [json.loads(line) for line in (pytester.path / "events.jsonl").read_text().splitlines()]
    last_deployment_end = max(e["t"] for e in events if e["name"] != "dra-support" and e["event"] == "end")
    (conformance_start,) = [e["t"] for e in events if e["name"] == "dra-support" and e["event"] == "start"]
    assert conformance_start >= last_deployment_end
    assert len({e["pid"] for e in events}) == 2  # both workers ran checks
    assert [t["status"] for t in read_ctrf(out)["results"]["tests"]] == ["passed"] * 4
    assert not list(Path(pytester.path).glob("aicr-pytest-ledger-*"))
