"""Bad-node isolation on a live cluster (``--isolate-bad-nodes``): the reruns of a failed NCCL check.

When an NCCL all-reduce check missed its floor or its launcher failed, :func:`isolate_failure`
deletes the failed run's TrainJob (a failed run's workers still hold their GPUs), then lets
:func:`aicr_pytest.nccl.isolation.isolate` plan at most ``⌈log2 n⌉ + 1`` rounds over the nodes the
run selected; :class:`SubsetRunner` runs one round:

1. every subset of the round becomes the check's own benchmark (same variant, runtime, plumbing and
   GPUs per worker: :func:`~aicr_pytest.nccl.render.render_benchmark`), sized to the subset, pinned
   to its nodes (:func:`~aicr_pytest.nccl.render.pin_to_nodes`) and given names of its own (a tag per
   rerun), created through the check's run scope: run-scoped names and labels, and the scope's
   cleanup covers success, failure, timeout and Ctrl-C;
2. every subset is created before any is waited for, so they run in parallel; each is then waited
   for in turn with the family's own wait, log read and parser, judged, and its TrainJob deleted
   (foreground, so its pods are gone) to free its GPUs for the next subset or round;
3. the verdict of a subset: its bus bandwidth against the check's floor.  A recipe states one floor
   per check, for the whole node set; a one-node subset is measured against that same floor as its
   intra-node floor: inside a node NCCL runs over NVLink, at least as fast as the network between
   nodes on every platform the checks support, so a node that misses the floor alone is slow (a
   node a little slow on NVLink may pass; the result never names a healthy node).  A multi-node
   subset also has to keep the variant's transport (``-net``: not Socket); a one-node subset does
   not use the network, so its transport is not judged.  Missed or launcher failed: ``False``;
   met: ``True``; anything that stopped the judgement (deadline, eviction, an unparsable log, an
   API error): ``None``, which the planner reports as not isolated, never as a pass.

Each round gets an equal share of the time the check has left.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.wait import wait_deleted
from aicr_pytest.nccl.cluster import (
    TRAINER_GROUP,
    TRAINER_VERSION,
    LauncherFailed,
    NcclBenchmark,
    Plumbing,
)
from aicr_pytest.nccl.isolation import IsolationResult, Outcome, Subset, isolate, round_budget
from aicr_pytest.nccl.parse import NcclParseError, parse_all_reduce
from aicr_pytest.nccl.render import pin_to_nodes, render_benchmark
from aicr_pytest.nccl.sizing import WorkerSizing
from aicr_pytest.nccl.variant import NcclCheckFailure, VariantPlan
from aicr_pytest.nccl.verdict import TransportError, verify_transport

log = logging.getLogger("aicr_pytest.nccl.isolation")

#: CTRF ``extra`` key of the isolation result (:meth:`IsolationResult.as_extra`)
EXTRA_ISOLATION: Final = "aicr.ncclIsolation"
MSG_ISOLATED: Final = "{failure}; bad-node isolation: {finding}"
LINE_ROUND: Final = "bad-node isolation round {number}: {results}"
_VERDICT: Final = {True: "passed", False: "failed", None: "not judged"}
TRAINJOB_API: Final = f"{TRAINER_GROUP}/{TRAINER_VERSION}"
RELEASE_WAIT_S: Final = 120.0


@dataclass(frozen=True)
class RerunInputs:
    """What every rerun shares with the failed run."""

    plan: VariantPlan
    sizing: WorkerSizing
    plumbing: Plumbing


@dataclass
class _Rerun:
    subset: Subset
    bench: NcclBenchmark
    trainjob: str | None = None
    outcome: Outcome = None


def release_trainjob(bench: NcclBenchmark, name: str) -> None:
    """Delete a TrainJob (foreground) and wait until it is gone; a failure is logged, not raised
    (the run scope's cleanup deletes it again at the end)."""
    try:
        bench.cluster.delete(TRAINJOB_API, "TrainJob", name, bench.namespace, missing_ok=True)
        wait_deleted(
            bench.cluster,
            TRAINJOB_API,
            "TrainJob",
            name,
            bench.namespace,
            timeout=min(RELEASE_WAIT_S, bench.remaining()),
            clock=bench.clock,
        )
    except (ApiError, Inconclusive) as exc:  # WaitTimeout is Inconclusive
        log.warning("%s: could not delete TrainJob %s/%s: %s", bench.check, bench.namespace, name, exc)


class SubsetRunner:
    """The ``run_round`` of :func:`~aicr_pytest.nccl.isolation.isolate` (see the module docstring)."""

    def __init__(self, bench: NcclBenchmark, inputs: RerunInputs, *, rounds: int) -> None:
        self.bench = bench  #: the failed run's: cluster, run scope, check, clock and deadline
        self.inputs = inputs
        self.rounds_left = rounds
        self.launched = 0

    def __call__(self, subsets: Sequence[Subset]) -> dict[Subset, Outcome]:
        b = self.bench
        now = b.clock.time()
        deadline = now + max(0.0, b.deadline - now) / max(1, self.rounds_left)
        self.rounds_left -= 1
        reruns: list[_Rerun] = []
        for subset in subsets:
            self.launched += 1
            bench = NcclBenchmark(
                b.cluster,
                b.run,
                check=b.check,
                clock=b.clock,
                deadline=deadline,
                tag=f"rerun-{self.launched}",
            )
            rerun = _Rerun(subset, bench)
            try:
                rerun.trainjob = self._launch(rerun)
            except (NcclCheckFailure, Inconclusive, ApiError) as exc:
                log.warning("%s: rerun on %s not started: %s", b.check, ", ".join(subset), exc)
            reruns.append(rerun)
        for rerun in reruns:  # all running: wait for each in turn, then free its GPUs
            if rerun.trainjob is not None:
                rerun.outcome = self._judge(rerun)
                release_trainjob(rerun.bench, rerun.trainjob)
        return {r.subset: r.outcome for r in reruns}

    def _launch(self, rerun: _Rerun) -> str:
        plan, plumbing = self.inputs.plan, self.inputs.plumbing
        sizing = WorkerSizing(
            worker_count=len(rerun.subset),
            gpu_count_per_node=self.inputs.sizing.gpu_count_per_node,
            node_names=rerun.subset,
        )
        objects = render_benchmark(plan, rerun.bench.render_inputs(sizing, plumbing), plumbing.scheduling)
        pin_to_nodes(objects.runtime, rerun.subset)
        return rerun.bench.apply(plan, objects)

    def _judge(self, rerun: _Rerun) -> Outcome:
        bench, plan = rerun.bench, self.inputs.plan
        assert rerun.trainjob is not None
        try:
            outcome = bench.wait(rerun.trainjob, len(rerun.subset))
        except LauncherFailed:
            return False
        except (Inconclusive, ApiError) as exc:
            log.warning("%s: rerun on %s not judged: %s", bench.check, ", ".join(rerun.subset), exc)
            return None
        try:
            result = parse_all_reduce(bench.launcher_log(outcome.launcher))
        except (NcclParseError, ApiError) as exc:
            log.warning("%s: rerun on %s not judged: %s", bench.check, ", ".join(rerun.subset), exc)
            return None
        if len(rerun.subset) > 1:
            try:
                verify_transport(plan.variant, result.transport)
            except TransportError:
                return False
        return plan.threshold.passes(result.busbw_gbps)


def isolate_failure(
    bench: NcclBenchmark, inputs: RerunInputs, *, trainjob: str, failure: str
) -> tuple[str, IsolationResult]:
    """Free the failed run's GPUs, run the isolation rounds on the nodes it selected; returns the
    check's failure message followed by the finding, and the result (for CTRF ``extra``)."""
    release_trainjob(bench, trainjob)
    nodes = list(inputs.sizing.node_names)
    runner = SubsetRunner(bench, inputs, rounds=round_budget(len(nodes)))
    result = isolate(nodes, runner)
    return MSG_ISOLATED.format(failure=failure, finding=result.message), result


def round_lines(result: IsolationResult) -> list[str]:
    """One stdout line per round: every subset and its verdict."""
    return [
        LINE_ROUND.format(
            number=r.number, results="; ".join(f"{'+'.join(s)} {_VERDICT[o]}" for s, o in r.results)
        )
        for r in result.rounds
    ]


__all__ = [
    "EXTRA_ISOLATION",
    "MSG_ISOLATED",
    "RerunInputs",
    "SubsetRunner",
    "isolate_failure",
    "release_trainjob",
    "round_lines",
]
