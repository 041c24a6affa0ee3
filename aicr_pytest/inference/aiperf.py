"""inference-perf benchmark (steps 4-5 of a run): the AIPerf Job and its fail-closed output parser.

:func:`build_aiperf_job` is the CPU-only AIPerf Job;
:func:`parse_aiperf_output` reads its result (sentinel-delimited Job log or a bare profile
export) and fails closed: a missing, non-numeric or unparsable metric is an
:class:`~aicr_pytest.inference.knobs.InferenceFailure`, never 0.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.inference.knobs import (
    AIPERF_DATASET_ENTRIES,
    AIPERF_IMAGE,
    AIPERF_RANDOM_SEED,
    InferenceFailure,
    InferenceKnobs,
)
from aicr_pytest.inference.render import aiperf_job_name, render_inference_template, run_labels

AIPERF_SENTINEL: Final = "===AIPERF-RESULT==="
MSG_AIPERF_NO_SENTINEL: Final = (
    'AIPerf result sentinel "===AIPERF-RESULT===" not found in pod logs (length={length}); '
    "benchmark likely failed"
)
MSG_AIPERF_NO_END_SENTINEL: Final = (
    "AIPerf result end sentinel not found in pod logs; benchmark may have been truncated"
)
MSG_AIPERF_BAD_JSON: Final = "failed to parse AIPerf JSON output: {error}"
MSG_AIPERF_MISSING: Final = "AIPerf output is missing {keys}; refusing to read a missing metric as 0"
MSG_AIPERF_NOT_NUMERIC: Final = "AIPerf output has a non-numeric {key}: {value}"
METRIC_THROUGHPUT: Final = ("output_token_throughput", "avg")
METRIC_TTFT_P99: Final = ("time_to_first_token", "p99")

MSG_AIPERF_NO_POD: Final = "[TIMEOUT] failed to find AIPerf pod for job {namespace}/{job} within {timeout}"
MSG_AIPERF_FAILED: Final = "[INTERNAL] AIPerf job failed: {detail}"
MSG_AIPERF_TIMEOUT: Final = "[TIMEOUT] AIPerf job {namespace}/{job} did not finish within {timeout}: {state}"
#: AIPerf pod phases: no pod within 5m, no verdict within 15m.
AIPERF_POD_TIMEOUT_S: Final = 300.0
AIPERF_RUN_TIMEOUT_S: Final = 900.0

# --- AIPerf output -------------------------------------------------


@dataclass(frozen=True)
class AIPerfMetrics:
    """What a saved AIPerf output yielded; ``error`` is ``None`` only when both values were found."""

    throughput_tokens_per_s: float | None
    ttft_p99_ms: float | None
    error: str | None
    source: str  # "log" (sentinel-delimited Job log) or "json" (profile export)

    @property
    def ok(self) -> bool:
        return self.error is None


def _extract_json_text(text: str) -> tuple[str | None, str | None, str]:
    """(json text, error, source) from a Job log with sentinels or a bare profile export."""
    start = text.find(AIPERF_SENTINEL)
    if start < 0:
        stripped = text.strip()
        if stripped.startswith("{"):
            return stripped, None, "json"
        return None, MSG_AIPERF_NO_SENTINEL.format(length=len(text)), "log"
    rest = text[start + len(AIPERF_SENTINEL) :]
    end = rest.find(AIPERF_SENTINEL)
    if end < 0:
        return None, MSG_AIPERF_NO_END_SENTINEL, "log"
    return rest[:end].strip(), None, "log"


def _metric(data: Mapping[str, Any], path: tuple[str, str]) -> tuple[float | None, str | None]:
    """(value, None) or (None, "missing") / (None, non-numeric message)."""
    outer = data.get(path[0])
    dotted = ".".join(path)
    if not isinstance(outer, Mapping) or path[1] not in outer:
        return None, "missing"
    value = outer[path[1]]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None, MSG_AIPERF_NOT_NUMERIC.format(key=dotted, value=json.dumps(value))
    return float(value), None


def read_aiperf_metrics(text: str) -> AIPerfMetrics:
    """Parse AIPerf output without raising; every problem lands in ``error``."""
    body, error, source = _extract_json_text(text)
    if body is None:
        return AIPerfMetrics(None, None, error, source)
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except ValueError as exc:
        return AIPerfMetrics(None, None, MSG_AIPERF_BAD_JSON.format(error=exc), source)
    if not isinstance(data, Mapping):
        return AIPerfMetrics(
            None, None, MSG_AIPERF_BAD_JSON.format(error="top-level value is not a JSON object"), source
        )
    throughput, t_err = _metric(data, METRIC_THROUGHPUT)
    ttft, f_err = _metric(data, METRIC_TTFT_P99)
    missing = [
        ".".join(p) for p, e in ((METRIC_THROUGHPUT, t_err), (METRIC_TTFT_P99, f_err)) if e == "missing"
    ]
    problems: list[str] = []
    if missing:
        problems.append(MSG_AIPERF_MISSING.format(keys=" and ".join(f'"{k}"' for k in missing)))
    problems.extend(e for e in (t_err, f_err) if e is not None and e != "missing")
    return AIPerfMetrics(throughput, ttft, "; ".join(problems) or None, source)


def _reject_constant(name: str) -> float:
    raise ValueError(f"invalid JSON constant {name}")


def parse_aiperf_output(text: str) -> tuple[float, float]:
    """(throughput tokens/sec, TTFT p99 ms) from AIPerf output; :class:`InferenceFailure` otherwise."""
    metrics = read_aiperf_metrics(text)
    if metrics.error is not None or metrics.throughput_tokens_per_s is None or metrics.ttft_p99_ms is None:
        raise InferenceFailure(metrics.error or "AIPerf output yielded no metrics")
    return metrics.throughput_tokens_per_s, metrics.ttft_p99_ms


# --- the AIPerf Job -------------------------------------------------------


@dataclass(frozen=True)
class AIPerfCounts:
    concurrency: int
    request_count: int
    warmup_request_count: int


def aiperf_counts(knobs: InferenceKnobs, gpu_count: int) -> AIPerfCounts:
    """concurrency = per-GPU × GPUs; requests = max(min, concurrency × per-concurrency); warm-up scales."""
    concurrency = knobs.concurrency_per_gpu * gpu_count
    return AIPerfCounts(
        concurrency=concurrency,
        request_count=max(knobs.min_requests, concurrency * knobs.requests_per_concurrency),
        warmup_request_count=concurrency * knobs.warmup_per_concurrency,
    )


def aiperf_script(endpoint: str, knobs: InferenceKnobs, counts: AIPerfCounts) -> str:
    """Deterministic benchmark script: fixed seed and prompt pool, stddev 0, temperature 0.

    The model is read from ``$AICR_MODEL``, never interpolated into the shell text.
    """
    args = [
        f"--url {shlex.quote(endpoint)} --endpoint-type chat --streaming",
        f"--concurrency {counts.concurrency} --request-count {counts.request_count} "
        f"--warmup-request-count {counts.warmup_request_count}",
        f"--prompt-input-tokens-mean {knobs.input_tokens_mean} --prompt-input-tokens-stddev 0",
        f"--prompt-output-tokens-mean {knobs.output_tokens_mean} --prompt-output-tokens-stddev 0",
        f"--num-dataset-entries {AIPERF_DATASET_ENTRIES} --random-seed {AIPERF_RANDOM_SEED} "
        "--extra-inputs temperature:0",
        "--output-artifact-dir /tmp/aiperf --export-level summary",
    ]
    return "\n".join(
        [
            "set -e",
            'aiperf profile "$AICR_MODEL" \\',
            *(f"  {a} \\" for a in args[:-1]),
            f"  {args[-1]}",
            f"echo '{AIPERF_SENTINEL}'",
            "cat /tmp/aiperf/profile_export_aiperf.json",
            f"echo '{AIPERF_SENTINEL}'",
        ]
    )


def image_pull_policy(image: str) -> str:
    """Digest → IfNotPresent; ``:latest`` → Always; local (ko.local/kind.local) → Never; else IfNotPresent."""
    if "@sha256:" in image:
        return "IfNotPresent"
    if image.startswith(("ko.local/", "kind.local/")):
        return "Never"
    if image.rsplit("/", 1)[-1].endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def build_aiperf_job(
    run_id: str,
    namespace: str,
    endpoint: str,
    knobs: InferenceKnobs,
    gpu_count: int,
    image: str = AIPERF_IMAGE,
    image_pull_secrets: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The AIPerf Job manifest (CPU-only, tolerate-all, no nodeSelector)."""
    counts = aiperf_counts(knobs, gpu_count)
    return render_inference_template(
        "aiperf-job.yaml",
        job_name=aiperf_job_name(run_id),
        namespace=namespace,
        labels=run_labels(run_id),
        aiperf_image=image,
        image_pull_policy=image_pull_policy(image),
        image_pull_secrets=[dict(s) for s in image_pull_secrets],
        script=aiperf_script(endpoint, knobs, counts),
        model=knobs.model,
    )
