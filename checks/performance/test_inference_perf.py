"""Performance phase: inference-perf — Dynamo + vLLM serving, AIPerf benchmark, fail-closed verdict.

The decisions live in :mod:`aicr_pytest.inference` (pure) and the cluster I/O in
:mod:`aicr_pytest.inference.cluster`; this test only orders them:

guards A/B (recipe only) → guard C (DynamoGraphDeployment CRD) → GPU allocation probe, policy
verification and node choice (evidence lines) → default StorageClass → per-run namespace, HF token
Secret, model cache, KAI Queue, [ResourceClaimTemplate], DynamoGraphDeployment → ready → endpoint
answers a real chat completion → AIPerf Job → parse (fail closed) → evaluate → cleanup.

Nothing is created before the guards and the node choice have passed.  With
``AICR_INFERENCE_PERF_NO_CLEANUP=1`` in the shell (or ``--no-cleanup``) everything is kept and the
commands to inspect it are printed.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from aicr_pytest import inference as inf
from aicr_pytest.core import normgates  # lazy: the cluster I/O module is imported when the check runs

if TYPE_CHECKING:  # annotations only
    from aicr_pytest import AllocationPolicy, CheckContext, Clock, DataTree, Recipe, RunScope
    from aicr_pytest.core.settings import Settings

log = logging.getLogger("aicr_pytest.check")


def _terminal_writer(config: pytest.Config, verbose_only: bool) -> Callable[[str], None]:
    """Write a line to the terminal (``-v`` only when ``verbose_only``) and to the check logger."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    show = reporter is not None and (config.get_verbosity() > 0 or not verbose_only)

    def write(line: str) -> None:
        log.info("inference-perf: %s", line)
        if not show or reporter is None:
            return
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.write_line(f"inference-perf: {line}")

    return write


def test_inference_perf(
    aicr_check: CheckContext,
    aicr_recipe: Recipe,
    aicr_allocation_policy: AllocationPolicy,
    aicr_data_tree: DataTree,
    aicr_run: RunScope,
    aicr_clock: Clock,
    pytestconfig: pytest.Config,
    aicr_settings: Settings,
) -> None:
    knobs = inf.preflight(
        aicr_check.constraints,
        [c.name for c in aicr_recipe.component_refs],
        inf.catalog_env(aicr_data_tree),
        os.environ,
    )
    secrets = [knobs.hf_token]

    def say(text: str) -> None:
        aicr_check.emit(inf.redact(text, secrets))

    cluster = aicr_run.cluster
    inf.guard_dgd_crd(inf.dgd_crd_lookup(cluster))
    mode, choice = inf.choose_node(cluster, aicr_allocation_policy.mode, aicr_check.node_selector, say)
    # structured evidence for the reports: the chosen node and how its workers get GPUs
    aicr_check.fact("node", choice.name)
    aicr_check.fact("wiring", choice.wiring)
    aicr_check.fact("GPUs benchmarked", f"{choice.free_gpus} of {choice.node_gpus}")
    inf.require_storage(cluster, knobs)
    cli_tolerations = None if aicr_check.tolerations is None else [t.to_k8s() for t in aicr_check.tolerations]
    tolerations = inf.worker_tolerations(choice.node, cli_tolerations)

    keep = knobs.no_cleanup or aicr_run.no_cleanup
    aicr_run.no_cleanup = keep
    workload = inf.InferenceWorkload(aicr_run, aicr_clock, knobs, say, _terminal_writer(pytestconfig, True))
    try:
        workload.deploy(choice, tolerations, mode.api_version)
        endpoint = workload.resolve_endpoint()
        workload.wait_endpoint(endpoint)
        output = workload.run_aiperf(endpoint, choice.free_gpus)
    finally:
        kept = workload.finish(keep)
        write = _terminal_writer(pytestconfig, False)
        for line in kept:
            say(line)
            write(line)

    throughput, ttft_p99 = inf.parse_aiperf_output(output)
    calibrated = (
        normgates.calibrated_gpus(aicr_recipe.criteria.accelerator) if aicr_settings.normalize_gates else None
    )
    verdict = inf.evaluate(throughput, ttft_p99, knobs, choice.free_gpus, choice.node_gpus, calibrated)
    if verdict.normalized is not None:  # --normalize-gates: the raw and the normalized verdict
        aicr_check.extra["aicr.normalizedGate"] = verdict.normalized
    for line in verdict.lines:
        say(line)
    for measurement in verdict.measurements:  # measured values vs constraints, for the reports
        aicr_check.measure(measurement)
    if verdict.failures:
        raise inf.InferenceFailure("; ".join(verdict.failures))
