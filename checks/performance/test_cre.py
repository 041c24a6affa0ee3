"""Performance phase, upstream AICR v1.x: ``nccl-cre-all-reduce-bw`` and ``cre-training-goodput``.

Both run one NVCRE ``Certification``; decisions live in :mod:`aicr_pytest.cre` (pure) and the cluster
work in :mod:`aicr_pytest.cre.cluster`.  This file only wires them together in upstream's order:
constraint and qualification → threshold and GPU nodes → Certification API → Certification → wait →
workflow → measurement → verdict (a pass only on nodes neither KWOK's nor a GPU simulator's).  The
measured value goes to CTRF ``extra["aicr.measurements"]``, the Certification and (goodput) NVCRE's
metrics to ``extra["aicr.creRun"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aicr_pytest import cre

if TYPE_CHECKING:  # annotations only
    from aicr_pytest.core.check import CheckContext
    from aicr_pytest.core.clock import Clock
    from aicr_pytest.core.recipe import Recipe
    from aicr_pytest.kube.client import Cluster
    from aicr_pytest.kube.run import RunScope


def _run(check: CheckContext, recipe: Recipe, cluster: Cluster, run: RunScope, clock: Clock) -> None:
    from aicr_pytest.cre.cluster import CreRun

    constraint = check.constraint()
    crit = recipe.criteria
    entry = cre.qualification(
        check.name, constraint.value if constraint else None, crit.service, crit.accelerator
    )
    assert constraint is not None  # qualification skipped otherwise
    work = CreRun(cluster, run, check=check.name, clock=clock, deadline=clock.time() + check.timeout_s)
    plan = cre.plan(check.name, entry, constraint.value, cre.gpu_nodes(work.gpu_nodes(), check.node_selector))
    work.require_api()  # where upstream's create would fail: after the node count

    created = work.submit(plan)
    meta: dict[str, Any] = created["metadata"]
    name, created_at = str(meta["name"]), str(meta.get("creationTimestamp") or "")
    info: dict[str, Any] = {"certification": f"{work.namespace}/{name}", "nodes": list(plan.nodes)}
    check.extra["aicr.creRun"] = info
    done = work.wait(name, check.emit)
    cre.check_failed(check.name, done)
    workflow = cre.workflow_name(done, entry)
    info["workflow"] = workflow

    measured, status = work.measure(workflow, created_at)
    if status is not None:  # goodput: NVCRE's metrics travel with the ratio
        info["goodput"] = cre.goodput_metrics(status)
    verdict = cre.evaluate(plan, measured, status)
    if verdict.failure is None:  # a pass measured on simulated GPUs is no pass
        work.refuse_simulated(plan.nodes)
    for line in verdict.lines:
        check.emit(line)
    check.measure(verdict.measurement)
    if verdict.failure is not None:
        check.fail(verdict.failure)


def test_nccl_cre_all_reduce_bw(
    aicr_check: CheckContext,
    aicr_recipe: Recipe,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_clock: Clock,
) -> None:
    _run(aicr_check, aicr_recipe, aicr_cluster, aicr_run, aicr_clock)


def test_cre_training_goodput(
    aicr_check: CheckContext,
    aicr_recipe: Recipe,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_clock: Clock,
) -> None:
    _run(aicr_check, aicr_recipe, aicr_cluster, aicr_run, aicr_clock)
