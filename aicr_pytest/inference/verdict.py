"""inference-perf verdict (step 5 of a run): the measured values against the recipe's gates.

:func:`evaluate` compares throughput (``>=``, scaled for a partly occupied node) and TTFT p99
(``<=``) with 10 % tolerance and yields the RESULT lines and the failure messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aicr_pytest.core import normgates, records
from aicr_pytest.inference.knobs import TOLERANCE, InferenceKnobs

RESULT_THROUGHPUT: Final = "RESULT: Inference throughput: {value:.2f} tokens/sec"
RESULT_TTFT: Final = "RESULT: Inference TTFT p99: {value:.2f} ms"
MSG_GATE_SCALED: Final = (
    "Throughput gate scaled to {g} of {G} node GPUs benchmarked: {threshold:.0f} → {effective:.0f} tokens/sec"
)
MSG_NORMALIZED: Final = (
    "Throughput gate normalized (--normalize-gates) to {g} GPUs of a {C}-GPU calibrated node: "
    "{threshold:.0f} → {norm:.0f} tokens/sec"
)
LINE_THROUGHPUT: Final = "Throughput constraint: {value} → {verdict}"
LINE_TTFT: Final = "TTFT p99 constraint: {value} → {verdict}"
MSG_THROUGHPUT_FAIL: Final = (
    "inference throughput {value:.2f} tokens/sec does not satisfy constraint "
    '"{constraint}" (with 10% tolerance)'
)
MSG_THROUGHPUT_FAIL_SCALED: Final = " — gate scaled to {effective:.0f} for {g} of {G} node GPUs benchmarked"
MSG_TTFT_FAIL: Final = (
    'inference TTFT p99 {value:.2f} ms does not satisfy constraint "{constraint}" (with 10% tolerance)'
)
# --- evaluation ----------------------------------------------------------


def scaled_throughput_threshold(threshold: float, gpu_count: int, gpu_count_per_node: int) -> float:
    """The full-node gate scaled by ``gpu_count / gpu_count_per_node`` when the node was partly busy."""
    if 0 < gpu_count < gpu_count_per_node:
        return threshold * gpu_count / gpu_count_per_node
    return threshold


@dataclass(frozen=True)
class Evaluation:
    """Lines to print (RESULT lines first) and the failure messages, if any."""

    lines: tuple[str, ...]
    failures: tuple[str, ...]
    #: throughput and TTFT p99 against their constraints (reports); judged only when constrained
    measurements: tuple[records.Measurement, ...] = ()
    #: ``--normalize-gates``: the raw and the normalized throughput verdict (CTRF ``extra``)
    normalized: dict[str, object] | None = None

    @property
    def passed(self) -> bool:
        return not self.failures


def evaluate(
    throughput: float,
    ttft_p99_ms: float,
    knobs: InferenceKnobs,
    gpu_count: int,
    gpu_count_per_node: int,
    calibrated_gpus: int | None = None,
) -> Evaluation:
    """Compare measured values to the recipe gates with 10 % tolerance.

    Throughput passes at ``>= 0.9 × gate`` (gate scaled for a partly occupied node); TTFT p99
    passes at ``<= 1.1 × ceiling`` and is never scaled.  Both constraints are always evaluated.
    With ``calibrated_gpus`` (``--normalize-gates``) the throughput gate is the recipe's floor per GPU
    of a ``calibrated_gpus`` node times the GPUs used; the raw verdict is kept beside it.
    """
    normalized: dict[str, object] | None = None
    lines = [RESULT_THROUGHPUT.format(value=throughput), RESULT_TTFT.format(value=ttft_p99_ms)]
    failures: list[str] = []
    measured = {
        "throughput": records.Measurement(name="inference throughput", value=throughput, unit="tokens/sec"),
        "ttft": records.Measurement(name="inference TTFT p99", value=ttft_p99_ms, unit="ms"),
    }
    if knobs.throughput_constraint is not None and knobs.throughput_threshold is not None:
        threshold = knobs.throughput_threshold
        effective = scaled_throughput_threshold(threshold, gpu_count, gpu_count_per_node)
        scaled = effective != threshold
        if scaled:
            lines.append(
                MSG_GATE_SCALED.format(
                    g=gpu_count, G=gpu_count_per_node, threshold=threshold, effective=effective
                )
            )
        ok = throughput >= effective * (1 - TOLERANCE)
        if calibrated_gpus:
            norm = normgates.normalized_throughput(threshold, gpu_count, calibrated_gpus)
            raw_ok, ok = ok, throughput >= norm * (1 - TOLERANCE)
            lines.append(
                MSG_NORMALIZED.format(g=gpu_count, C=calibrated_gpus, threshold=threshold, norm=norm)
            )
            normalized = {
                "raw": {"threshold": effective * (1 - TOLERANCE), "passed": raw_ok},
                "normalized": {"threshold": norm * (1 - TOLERANCE), "passed": ok},
                "gpusUsed": gpu_count,
                "calibratedGpusPerNode": calibrated_gpus,
                "source": normgates.CALIBRATED_SOURCE,
            }
            effective = norm
        lines.append(
            LINE_THROUGHPUT.format(value=knobs.throughput_constraint, verdict="PASS" if ok else "FAIL")
        )
        measured["throughput"] = measured["throughput"].model_copy(
            update={
                "constraint": knobs.throughput_constraint,
                "tolerance": TOLERANCE,
                "effective_threshold": effective * (1 - TOLERANCE),
                "passed": ok,
            }
        )
        if not ok:
            msg = MSG_THROUGHPUT_FAIL.format(value=throughput, constraint=knobs.throughput_constraint)
            if scaled:
                msg += MSG_THROUGHPUT_FAIL_SCALED.format(
                    effective=effective, g=gpu_count, G=gpu_count_per_node
                )
            failures.append(msg)
    if knobs.ttft_constraint is not None and knobs.ttft_threshold is not None:
        ok = ttft_p99_ms <= knobs.ttft_threshold * (1 + TOLERANCE)
        lines.append(LINE_TTFT.format(value=knobs.ttft_constraint, verdict="PASS" if ok else "FAIL"))
        measured["ttft"] = measured["ttft"].model_copy(
            update={
                "constraint": knobs.ttft_constraint,
                "tolerance": TOLERANCE,
                "effective_threshold": knobs.ttft_threshold * (1 + TOLERANCE),
                "passed": ok,
            }
        )
        if not ok:
            failures.append(MSG_TTFT_FAIL.format(value=ttft_p99_ms, constraint=knobs.ttft_constraint))
    return Evaluation(tuple(lines), tuple(failures), tuple(measured.values()), normalized)
