"""Performance phase: NCCL all-reduce bus bandwidth (default, ``-net`` and ``-nvls`` variants).

One test function, one item per check.  Decisions live in :mod:`aicr_pytest.nccl` (pure) and the
cluster work in :mod:`aicr_pytest.nccl.cluster`; this function only wires them together in the
order AICR runs them: variant → nodes and sizing → Trainer → plumbing and preflights → TrainJob →
launcher log → parse → transport → threshold; with ``--isolate-bad-nodes``, a missed floor or a
failed launcher is followed by reruns on node subsets (:mod:`aicr_pytest.nccl.rerun`).  Evidence:
the parsed sweep goes to CTRF ``extra`` (``aicr.ncclSweep``; the isolation result
``aicr.ncclIsolation``) and, with ``--evidence-dir``, ``<check>-busbw.svg`` plus the launcher log.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from aicr_pytest import nccl  # lazy: the cluster I/O module is imported when the check runs

if TYPE_CHECKING:  # annotations only
    from aicr_pytest import CheckContext, Clock, Cluster, DataTree, Recipe, RunScope, Settings
    from aicr_pytest.nccl import NcclBenchmark


def test_nccl_all_reduce_bw(
    aicr_check: CheckContext,
    aicr_recipe: Recipe,
    aicr_settings: Settings,
    aicr_data_tree: DataTree,
    aicr_cluster: Cluster,
    aicr_run: RunScope,
    aicr_clock: Clock,
) -> None:
    plan = nccl.resolve_variant(
        aicr_check.name, aicr_recipe.criteria, aicr_check.constraints, os.environ, data=aicr_data_tree
    )
    aicr_check.extra[nccl.EXTRA_RUNTIME_SOURCE] = plan.runtime_source  # AICR's extra.runtimeSource
    if plan.runtime_image is not None:  # AICR_NCCL_RUNTIME_IMAGE, rendered into the workload containers
        aicr_check.emit(nccl.MSG_RUNTIME_IMAGE_LINE.format(image=plan.runtime_image))
    bench = nccl.NcclBenchmark(
        aicr_cluster,
        aicr_run,
        check=aicr_check.name,
        clock=aicr_clock,
        deadline=aicr_clock.time() + aicr_check.timeout_s,
    )

    targets = nccl.select_target_nodes(
        bench.gpu_nodes(),
        accelerator=plan.criteria_accelerator,
        service=plan.target_service,
        node_selector=plan.sizing_selector(aicr_check.node_selector),
    )
    sizing = nccl.size_workers(targets)
    bench.require_trainer()
    plumbing = bench.plumbing(
        plan,
        targets,
        node_selector=aicr_check.node_selector,
        tolerations=nccl.tolerations_k8s(aicr_check.tolerations),
    )
    bench.preflight(plan, targets)

    objects = nccl.render_benchmark(plan, bench.render_inputs(sizing, plumbing), plumbing.scheduling)
    trainjob = bench.apply(plan, objects)
    aicr_check.extra["aicr.ncclRun"] = {
        "trainJob": f"{bench.namespace}/{trainjob}",
        "workers": sizing.worker_count,
        "gpusPerWorker": sizing.gpu_count_per_node,
        "nodes": list(sizing.node_names),
        "runtime": plan.runtime_template or (plan.private_runtime.source if plan.private_runtime else ""),
    }
    rerun = nccl.RerunInputs(plan, sizing, plumbing)  # --isolate-bad-nodes: what reruns share
    try:
        outcome = bench.wait(trainjob, sizing.worker_count)
    except nccl.LauncherFailed as failure:
        _diagnostics(aicr_check, failure.diagnostics)
        if not aicr_settings.isolate_bad_nodes:
            raise
        raise nccl.NcclCheckFailure(_isolate(aicr_check, bench, rerun, trainjob, str(failure))) from failure
    text = bench.launcher_log(outcome.launcher)
    _write_evidence(aicr_settings, f"{aicr_check.name}-launcher.log", text)

    try:
        result = nccl.parse_all_reduce(text)
    except nccl.NcclParseError as exc:
        aicr_check.extra["aicr.diagnostics"] = {nccl.DIAGNOSTIC_LABEL: list(exc.tail)}
        for line in exc.diagnostic_block():
            aicr_check.emit(line)
        raise
    aicr_check.extra["aicr.ncclSweep"] = result.to_json()
    plot = nccl.sweep_plot(aicr_check.name, result.rows, plan.threshold)
    aicr_check.figure(f"{aicr_check.name}: bus bandwidth by message size", plot)  # the HTML report
    _write_evidence(aicr_settings, f"{aicr_check.name}-busbw.svg", plot)

    nccl.verify_transport(plan.variant, result.transport)
    threshold = plan.threshold
    if aicr_settings.normalize_gates:  # aicr-pytest's own: the floor for this fabric and node shape
        threshold = _normalized(aicr_check, plan, sizing.gpu_count_per_node, result.busbw_gbps)
    verdict = nccl.evaluate(aicr_check.name, threshold, result.busbw_gbps)
    for line in verdict.lines:
        aicr_check.emit(line)
    if verdict.measurement is not None:  # measured value vs constraint, for the reports
        aicr_check.measure(verdict.measurement)
    if verdict.failure is not None:
        if aicr_settings.isolate_bad_nodes:
            aicr_check.fail(_isolate(aicr_check, bench, rerun, trainjob, verdict.failure))
        aicr_check.fail(verdict.failure)


def _normalized(
    check: CheckContext, plan: nccl.VariantPlan, gpus_per_node: int, busbw: float
) -> nccl.Threshold:
    """``--normalize-gates``: the threshold from the NCCL table; CTRF gets the raw and normalized verdict."""
    from dataclasses import replace

    from aicr_pytest.core import normgates

    fabric = normgates.fabric_class(plan.variant, plan.fabric, plan.target_service)
    value, factor = normgates.normalized_nccl(plan.threshold.value, fabric, gpus_per_node)
    normalized = replace(plan.threshold, value=value)
    check.extra["aicr.normalizedGate"] = {
        "raw": {"threshold": plan.threshold.effective, "passed": plan.threshold.passes(busbw)},
        "normalized": {"threshold": normalized.effective, "passed": normalized.passes(busbw)},
        "fabric": fabric,
        "gpusPerNode": gpus_per_node,
        "factor": factor,
        "source": normgates.NCCL_SOURCE,
    }
    return normalized


def _isolate(
    check: CheckContext, bench: NcclBenchmark, rerun: nccl.RerunInputs, trainjob: str, failure: str
) -> str:
    """Bad-node isolation after ``failure``: the reruns' rounds go to stdout, the result to CTRF
    ``extra``; returns the failure message followed by the finding."""
    message, result = nccl.isolate_failure(bench, rerun, trainjob=trainjob, failure=failure)
    for line in nccl.round_lines(result):
        check.emit(line)
    check.extra[nccl.EXTRA_ISOLATION] = result.as_extra()
    return message


def _diagnostics(check: CheckContext, blocks: dict[str, list[str]]) -> None:
    """Diagnostic blocks go to stdout (as AICR prints them) and to CTRF ``extra``."""
    check.extra.setdefault("aicr.diagnostics", {}).update(blocks)
    for label, lines in blocks.items():
        check.emit(f"--- {label} ---")
        for line in lines or ["(empty)"]:
            check.emit(line)


def _write_evidence(settings: Settings, name: str, content: str) -> None:
    if settings.evidence_dir is None:
        return
    settings.evidence_dir.mkdir(parents=True, exist_ok=True)
    (settings.evidence_dir / name).write_text(content, encoding="utf-8")
