"""``aicr-pytest parse aiperf FILE [--format text|json]``: the inference-perf parser on a saved output.

FILE is either AIPerf's ``profile_export_aiperf.json`` or the AIPerf Job log that carries it
between ``===AIPERF-RESULT===`` sentinels.  The parser is the one the check uses, so it fails
closed the same way: a missing or non-numeric throughput / TTFT p99 is an error naming the key.
Exit 0 when both values were found, 1 otherwise; an unreadable FILE is a usage error (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final, Literal, TextIO

from aicr_pytest.core.errors import UsageError
from aicr_pytest.inference import RESULT_THROUGHPUT, RESULT_TTFT, read_aiperf_metrics

MSG_FILE_NOT_FOUND: Final = "AIPerf output file not found: {path}"
MSG_FILE_UNREADABLE: Final = "cannot read AIPerf output file {path}: {error}"


def run_parse_aiperf(path: str, fmt: Literal["text", "json"], out: TextIO) -> int:
    """Parse ``path`` and write the result to ``out``; return the exit code (0 found, 1 not)."""
    file = Path(path)
    if not file.exists():
        raise UsageError(MSG_FILE_NOT_FOUND.format(path=path))
    try:
        text = file.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(MSG_FILE_UNREADABLE.format(path=path, error=exc.strerror or exc)) from exc
    metrics = read_aiperf_metrics(text)
    if fmt == "json":
        doc = {
            "throughput_tokens_per_s": metrics.throughput_tokens_per_s,
            "ttft_p99_ms": metrics.ttft_p99_ms,
            "error": metrics.error,
            "source": metrics.source,
        }
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        if metrics.throughput_tokens_per_s is not None:
            out.write(RESULT_THROUGHPUT.format(value=metrics.throughput_tokens_per_s) + "\n")
        if metrics.ttft_p99_ms is not None:
            out.write(RESULT_TTFT.format(value=metrics.ttft_p99_ms) + "\n")
        if metrics.error is not None:
            out.write(f"error: {metrics.error}\n")
    return 0 if metrics.ok else 1
