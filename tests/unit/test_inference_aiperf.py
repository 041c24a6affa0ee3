"""AIPerf parsing (fail closed), evaluation lines, AIPerf Job, names, redaction."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from aicr_pytest import inference as inf
from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.recipe import Constraint
from aicr_pytest.inference.cli import run_parse_aiperf

# our AIPerf outputs (tests/fixtures/aiperf; AICR's own samples: tests/compat) and what they hold
SAMPLES: dict[str, tuple[float | None, float | None, str | None]] = {
    "profile-export.json": (6120.25, 91.7, None),
    "pod-log-pass.log": (6120.25, 91.7, None),
    "pod-log-no-sentinel.log": (None, None, "sentinel"),
    "pod-log-malformed-json.log": (None, None, "parse"),
}


@pytest.fixture(scope="module")
def samples() -> Path:
    return Path(__file__).resolve().parents[1] / "fixtures" / "aiperf"


def test_every_aiperf_fixture_is_covered(samples: Path) -> None:
    assert sorted(p.name for p in samples.iterdir()) == sorted(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_parser_on_our_outputs(samples: Path, name: str) -> None:
    throughput, ttft, error = SAMPLES[name]
    metrics = inf.read_aiperf_metrics((samples / name).read_text())
    assert metrics.throughput_tokens_per_s == throughput
    assert metrics.ttft_p99_ms == ttft
    if error is None:
        assert metrics.ok and inf.parse_aiperf_output((samples / name).read_text()) == (throughput, ttft)
    else:
        assert metrics.error is not None and error in metrics.error
        with pytest.raises(inf.InferenceFailure, match=error):
            inf.parse_aiperf_output((samples / name).read_text())


def test_no_sentinel_exact_text(samples: Path) -> None:
    text = (samples / "pod-log-no-sentinel.log").read_text()
    assert inf.read_aiperf_metrics(text).error == (
        f'AIPerf result sentinel "===AIPERF-RESULT===" not found in pod logs (length={len(text)}); '
        "benchmark likely failed"
    )


def test_missing_end_sentinel() -> None:
    text = 'x\n===AIPERF-RESULT===\n{"output_token_throughput": {"avg": 1}'
    assert inf.read_aiperf_metrics(text).error == (
        "AIPerf result end sentinel not found in pod logs; benchmark may have been truncated"
    )


def wrap(data: object) -> str:
    return f"noise\n===AIPERF-RESULT===\n{json.dumps(data)}\n===AIPERF-RESULT===\n"


def test_missing_ttft_key_fails_naming_it() -> None:
    # AICR reads the missing p99 as 0 and would PASS a "<= 2000" gate; we fail closed
    data = {"output_token_throughput": {"avg": 60000.0}, "time_to_first_token": {"avg": 40.0}}
    metrics = inf.read_aiperf_metrics(wrap(data))
    assert metrics.throughput_tokens_per_s == 60000.0 and metrics.ttft_p99_ms is None
    assert metrics.error == (
        'AIPerf output is missing "time_to_first_token.p99"; refusing to read a missing metric as 0'
    )
    with pytest.raises(inf.InferenceFailure, match=r"time_to_first_token\.p99"):
        inf.parse_aiperf_output(wrap(data))


def test_missing_both_keys() -> None:
    assert inf.read_aiperf_metrics(wrap({})).error == (
        'AIPerf output is missing "output_token_throughput.avg" and "time_to_first_token.p99"; '
        "refusing to read a missing metric as 0"
    )


@pytest.mark.parametrize("bad", ["fast", None, True, [1], {"x": 1}, -1])
def test_non_numeric_values_fail(bad: object) -> None:
    data = {"output_token_throughput": {"avg": bad}, "time_to_first_token": {"p99": 1.0}}
    error = inf.read_aiperf_metrics(wrap(data)).error
    assert error == f"AIPerf output has a non-numeric output_token_throughput.avg: {json.dumps(bad)}"


def test_nan_and_non_object_json_fail() -> None:
    nan = '===AIPERF-RESULT===\n{"output_token_throughput": {"avg": NaN}}\n===AIPERF-RESULT==='
    assert (inf.read_aiperf_metrics(nan).error or "").startswith("failed to parse AIPerf JSON output")
    assert (inf.read_aiperf_metrics(wrap([1, 2])).error or "").startswith(
        "failed to parse AIPerf JSON output"
    )


def test_integer_values_accepted() -> None:
    data = {"output_token_throughput": {"avg": 100}, "time_to_first_token": {"p99": 7}}
    assert inf.parse_aiperf_output(wrap(data)) == (100.0, 7.0)


# --- evaluation ----------------------------------------------------------------------------------


def knobs(throughput: str | None = ">= 50000", ttft: str | None = "<= 2000") -> inf.InferenceKnobs:
    cs = []
    if throughput is not None:
        cs.append(Constraint(name="inference-throughput", value=throughput))
    if ttft is not None:
        cs.append(Constraint(name="inference-ttft-p99", value=ttft))
    return inf.resolve_knobs(cs)


def test_guide_passing_sample_lines() -> None:
    ev = inf.evaluate(108789.87, 687.5, knobs(), 8, 8)
    assert ev.passed
    assert ev.lines == (
        "RESULT: Inference throughput: 108789.87 tokens/sec",
        "RESULT: Inference TTFT p99: 687.50 ms",
        "Throughput constraint: >= 50000 → PASS",
        "TTFT p99 constraint: <= 2000 → PASS",
    )


@pytest.mark.parametrize(("value", "ok"), [(45000.0, True), (44999.99, False)])
def test_throughput_tolerance_boundary(value: float, ok: bool) -> None:
    ev = inf.evaluate(value, 1.0, knobs(), 8, 8)
    assert ev.passed is ok
    assert ev.lines[2] == f"Throughput constraint: >= 50000 → {'PASS' if ok else 'FAIL'}"


@pytest.mark.parametrize(("value", "ok"), [(2200.0, True), (2200.01, False)])
def test_ttft_tolerance_boundary_never_scaled(value: float, ok: bool) -> None:
    ev = inf.evaluate(1e9, value, knobs(), 2, 8)  # partial node: throughput scaled, TTFT not
    assert ev.passed is ok
    assert ev.lines[-1] == f"TTFT p99 constraint: <= 2000 → {'PASS' if ok else 'FAIL'}"
    if not ok:
        assert ev.failures == (
            f'inference TTFT p99 {value:.2f} ms does not satisfy constraint "<= 2000" (with 10% tolerance)',
        )


def test_both_failures_reported() -> None:
    ev = inf.evaluate(100.0, 9999.0, knobs(), 8, 8)
    assert len(ev.failures) == 2
    assert ev.failures[0] == (
        'inference throughput 100.00 tokens/sec does not satisfy constraint ">= 50000" (with 10% tolerance)'
    )


def test_only_declared_constraints_evaluated() -> None:
    ev = inf.evaluate(1.0, 1.0, knobs(throughput=None), 8, 8)
    assert ev.lines == (
        "RESULT: Inference throughput: 1.00 tokens/sec",
        "RESULT: Inference TTFT p99: 1.00 ms",
        "TTFT p99 constraint: <= 2000 → PASS",
    )


@pytest.mark.parametrize(
    ("g", "big_g", "expected"),
    [(8, 8, 50000), (4, 8, 25000), (2, 8, 12500), (2, 0, 50000), (0, 8, 50000), (9, 8, 50000)],
)
def test_scaled_threshold_table(g: int, big_g: int, expected: float) -> None:
    assert inf.scaled_throughput_threshold(50000, g, big_g) == expected


# --- run id, names, AIPerf Job -------------------------------------------------------------------


def test_run_id_and_names() -> None:
    run_id = inf.derive_run_id("20260422-145927-2e674d7ee93860ac")
    assert run_id == "292d64ed"
    assert inf.workload_namespace(run_id) == "aicr-inference-perf-292d64ed"
    assert inf.aiperf_job_name(run_id) == "aicr-aiperf-292d64ed"
    assert inf.populate_job_name(run_id) == "aicr-model-cache-populate-292d64ed"
    random_ids = {inf.derive_run_id(None) for _ in range(5)}
    assert len(random_ids) == 5 and all(len(r) == 8 and int(r, 16) >= 0 for r in random_ids)
    assert inf.derive_run_id("r", "gw0") != inf.derive_run_id("r", "gw1") != inf.derive_run_id("r")


def test_aiperf_counts_h100_example() -> None:
    counts = inf.aiperf_counts(knobs(), 8)
    assert (counts.concurrency, counts.request_count, counts.warmup_request_count) == (2048, 16384, 2048)
    small = inf.aiperf_counts(inf.resolve_knobs([], {inf.ENV_CONCURRENCY: "1"}), 1)
    assert (small.request_count, small.warmup_request_count) == (1000, 1)


def test_aiperf_job_deterministic_settings() -> None:
    k = inf.resolve_knobs([], {inf.ENV_WARMUP: "2"})
    job = inf.build_aiperf_job(
        "abcd1234",
        "aicr-inference-perf-abcd1234",
        "http://svc:8000",
        k,
        4,
        image_pull_secrets=[{"name": "regcred"}],
    )
    assert job["kind"] == "Job" and job["metadata"]["name"] == "aicr-aiperf-abcd1234"
    assert job["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "aicr-pytest",
        "aicr.run/run-id": "abcd1234",
    }
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["ttlSecondsAfterFinished"] == 3600
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["tolerations"] == [{"operator": "Exists"}]
    assert "nodeSelector" not in pod and pod["imagePullSecrets"] == [{"name": "regcred"}]
    container = pod["containers"][0]
    assert container["imagePullPolicy"] == "Always"
    assert container["env"] == [{"name": "AICR_MODEL", "value": "Qwen/Qwen3-8B"}]
    script = container["command"][2]
    assert container["command"][:2] == ["/bin/sh", "-c"]
    for flag in (
        "--random-seed 100",
        "--prompt-input-tokens-stddev 0",
        "--prompt-output-tokens-stddev 0",
        "--extra-inputs temperature:0",
        "--num-dataset-entries 100",
        "--concurrency 1024",
        "--request-count 8192",
        "--warmup-request-count 2048",
        "--streaming",
    ):
        assert flag in script
    assert 'aiperf profile "$AICR_MODEL"' in script and "Qwen" not in script
    assert script.count("===AIPERF-RESULT===") == 2


def test_endpoint_is_shell_quoted() -> None:
    script = inf.aiperf_script("http://x:1/$(rm -rf /)", knobs(), inf.aiperf_counts(knobs(), 1))
    assert "'http://x:1/$(rm -rf /)'" in script


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("repo/aiperf:latest", "Always"),
        ("repo/aiperf@sha256:abc", "IfNotPresent"),
        ("repo/aiperf:v1.2.3", "IfNotPresent"),
        ("ko.local/aiperf:dev", "Never"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert inf.image_pull_policy(image) == policy


# --- secrets -------------------------------------------------------------------------------------

TOKEN = "hf_SENTINELtoken1234567890"


def test_redact_raw_and_base64() -> None:
    b64 = base64.b64encode(TOKEN.encode()).decode()
    text = f"token={TOKEN} data={b64} none"
    out = inf.redact(text, [TOKEN, None, ""])
    assert TOKEN not in out and b64 not in out
    assert out == "token=<redacted> data=<redacted> none"
    assert inf.redact("abc", []) == "abc"


def test_hf_secret_never_printable() -> None:
    secret = inf.build_hf_token_secret("ns", TOKEN, "abcd1234")
    assert secret["stringData"] == {"token": TOKEN}
    printed = inf.printable_manifest(secret, [TOKEN])
    assert TOKEN not in printed and "<redacted>" in printed
    data_form = {"kind": "Secret", "data": {"token": base64.b64encode(TOKEN.encode()).decode()}}
    assert base64.b64encode(TOKEN.encode()).decode() not in inf.printable_manifest(data_form)
    assert TOKEN not in repr(inf.resolve_knobs([], {}, {"HF_TOKEN": TOKEN}))


def test_token_never_in_rendered_workload() -> None:
    from _gpu_objects import node

    k = inf.resolve_knobs([], {}, {"HF_TOKEN": TOKEN})
    choice = inf.NodeChoice(
        node=node("a"), name="a", free_gpus=2, node_gpus=8, dra_wiring=False, candidates=1
    )
    manifests = inf.render_workload("abcd1234", k, choice, [], None)
    job = inf.build_aiperf_job("abcd1234", "ns", "http://e", k, 2)
    assert TOKEN not in yamlio.dump([*manifests, job])


# --- aicr-pytest parse aiperf --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_parse_command_json(samples: Path, name: str) -> None:
    out = io.StringIO()
    rc = run_parse_aiperf(str(samples / name), "json", out)
    doc = json.loads(out.getvalue())
    throughput, ttft, error = SAMPLES[name]
    assert doc["throughput_tokens_per_s"] == throughput and doc["ttft_p99_ms"] == ttft
    if error is None:
        assert rc == 0 and doc["error"] is None
    else:
        assert rc == 1 and error in doc["error"]


def test_parse_command_text(samples: Path) -> None:
    out = io.StringIO()
    assert run_parse_aiperf(str(samples / "pod-log-pass.log"), "text", out) == 0
    assert out.getvalue().splitlines() == [
        "RESULT: Inference throughput: 6120.25 tokens/sec",
        "RESULT: Inference TTFT p99: 91.70 ms",
    ]
    out = io.StringIO()
    assert run_parse_aiperf(str(samples / "pod-log-no-sentinel.log"), "text", out) == 1
    assert out.getvalue().startswith("error: AIPerf result sentinel")


def test_parse_command_missing_key_names_it(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"output_token_throughput": {"avg": 10.0}}))
    out = io.StringIO()
    assert run_parse_aiperf(str(path), "json", out) == 1
    doc = json.loads(out.getvalue())
    assert doc["throughput_tokens_per_s"] == 10.0 and doc["ttft_p99_ms"] is None
    assert "time_to_first_token.p99" in doc["error"]


def test_parse_command_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        run_parse_aiperf(str(tmp_path / "nope.json"), "json", io.StringIO())
    assert str(exc.value) == f"AIPerf output file not found: {tmp_path / 'nope.json'}"
    with pytest.raises(UsageError):
        run_parse_aiperf(str(tmp_path), "text", io.StringIO())
