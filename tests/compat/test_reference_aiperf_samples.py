"""AICR's AIPerf samples (read in place from ../shared/reference): the values its INDEX.md gives."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from aicr_pytest import inference as inf
from aicr_pytest.inference.cli import run_parse_aiperf

pytestmark = pytest.mark.compat

# INDEX.md expectations for the aiperf-* samples under reference/samples.
SAMPLES: dict[str, tuple[float | None, float | None, str | None]] = {
    "aiperf-profile-export.json": (5667.5, 84.1, None),
    "aiperf-pod-log-pass.log": (5667.5, 84.1, None),
    "aiperf-pod-log-no-sentinel.log": (None, None, "sentinel"),
    "aiperf-pod-log-malformed-json.log": (None, None, "parse"),
}


@pytest.fixture(scope="module")
def samples(reference_dir: Path) -> Path:
    return reference_dir / "samples"


def test_every_aiperf_sample_is_covered(samples: Path) -> None:
    assert sorted(p.name for p in samples.glob("aiperf-*")) == sorted(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_parser_on_reference_samples(samples: Path, name: str) -> None:
    throughput, ttft, error = SAMPLES[name]
    text = (samples / name).read_text()
    metrics = inf.read_aiperf_metrics(text)
    assert (metrics.throughput_tokens_per_s, metrics.ttft_p99_ms) == (throughput, ttft)
    if error is None:
        assert metrics.ok and inf.parse_aiperf_output(text) == (throughput, ttft)
    else:
        assert metrics.error is not None and error in metrics.error
    out = io.StringIO()
    rc = run_parse_aiperf(str(samples / name), "json", out)
    assert rc == (0 if error is None else 1)
    assert json.loads(out.getvalue())["throughput_tokens_per_s"] == throughput
