"""Every measured value read back from a CTRF document (aicr_pytest.report.measures)."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.health import exporter as ex
from aicr_pytest.report import measures as ms
from aicr_pytest.report.measures import Measurement


def _doc(*tests: dict[str, Any]) -> dict[str, Any]:
    return {"reportFormat": "CTRF", "results": {"tests": list(tests)}}


NET = "nccl-all-reduce-bw-net"
NCCL = {
    "name": NET,
    "status": "passed",
    "duration": 61234,
    "suite": ["performance"],
    "extra": {
        "aicr.measurements": [
            {
                "name": "bus bandwidth",
                "value": 412.5,
                "unit": "GB/s",
                "constraint": ">= 300",
                "tolerance": 0.1,
                "effectiveThreshold": 270.0,
                "passed": True,
            }
        ]
    },
}
INFERENCE = {
    "name": "inference-perf",
    "status": "failed",
    "duration": 1000,
    "suite": ["performance"],
    "extra": {
        "aicr.facts": {"node": "gpu-node-1", "wiring": "dra"},
        "aicr.measurements": [
            {
                "name": "inference throughput",
                "value": 5000,
                "unit": "tokens/sec",
                "constraint": ">= 6000",
                "effectiveThreshold": 5400.0,
                "passed": False,
            },
            {
                "name": "inference TTFT p99",
                "value": 120.0,
                "unit": "ms",
                "constraint": "<= 200",
                "effectiveThreshold": 220.0,
                "passed": True,
            },
        ],
    },
}


def test_nccl_bandwidth_per_variant_and_duration() -> None:
    got = ms.measurements(_doc(NCCL))
    assert got == [
        Measurement(
            "nccl-all-reduce-bw-net", "performance", "bus bandwidth", 412.5, "GB/s", None, 270.0, "higher"
        ),
        Measurement("nccl-all-reduce-bw-net", "performance", "duration", 61.234, "s", None, None, "lower"),
    ]
    assert got[0].label() == "nccl-all-reduce-bw-net: bus bandwidth"
    assert got[0].key == ("nccl-all-reduce-bw-net", "bus bandwidth", "")


def test_inference_throughput_and_ttft_on_their_node() -> None:
    got = ms.measurements(_doc(INFERENCE))
    assert [(m.name, m.value, m.node, m.floor, m.better) for m in got] == [
        ("inference throughput", 5000.0, "gpu-node-1", 5400.0, "higher"),
        ("inference TTFT p99", 120.0, "gpu-node-1", 220.0, "lower"),
        ("duration", 1.0, None, None, "lower"),
    ]
    assert got[1].label() == "inference-perf: inference TTFT p99 @ gpu-node-1"


def test_health_table_and_counters_per_node() -> None:
    test = {
        "name": "gpu-health",
        "status": "failed",
        "duration": 5,
        "suite": ["deployment"],
        "extra": {
            "aicr.gpuHealth": {"window_s": 60, "counters": {"n1": {ex.NVLINK_REPLAY: 3.0}, "n2": {}}},
            "aicr.healthTable": [
                {"node": "n1", "gpu": "0", "test": "exporter health", "result": "fail"},
                {"node": "n1", "gpu": "1", "test": "exporter health", "result": "pass"},
                {"node": "n1", "gpu": "1", "test": "exporter health", "result": "other"},
                {"node": "n2", "gpu": "0", "test": "exporter health", "result": "pass"},
                {"node": "", "gpu": "0", "result": "fail"},
                "not a row",
            ],
        },
    }
    got = [(m.name, m.node, m.value, m.floor, m.better) for m in ms.measurements(_doc(test))]
    assert got == [
        ("unhealthy GPUs", "n1", 1.0, 0.0, "lower"),
        ("unjudged GPUs", "n1", 1.0, 0.0, "lower"),
        ("unhealthy GPUs", "n2", 0.0, 0.0, "lower"),
        ("unjudged GPUs", "n2", 0.0, 0.0, "lower"),
        (ex.NVLINK_REPLAY, "n1", 3.0, None, "lower"),
        ("duration", None, 0.005, None, "lower"),
    ]


@pytest.mark.parametrize(
    "doc",
    [
        {},
        {"results": None},
        {"results": {"tests": "x"}},
        _doc({"name": "a", "status": "skipped", "duration": 3, "suite": ["deployment"]}),
        _doc({"name": "K8s.server.version", "status": "passed", "duration": 0, "suite": ["readiness"]}),
        _doc({"name": "", "status": "passed", "duration": 0, "suite": ["x"]}),
        _doc(
            {
                "name": "a",
                "status": "skipped",
                "suite": ["x"],
                "extra": {
                    "aicr.measurements": [
                        {"name": "m", "value": None},
                        {"name": "m", "value": True},
                        {"name": "m", "value": "1"},
                        {"name": "", "value": 1},
                        {"value": 1},
                        "x",
                    ]
                },
            }
        ),
    ],
)
def test_nothing_measured_or_unreadable_is_left_out(doc: dict[str, Any]) -> None:
    assert ms.measurements(doc) == []


@pytest.mark.parametrize(
    ("constraint", "name", "better"),
    [
        (">= 1", "ttft", "higher"),
        ("> 1", "x", "higher"),
        ("<= 1", "throughput", "lower"),
        ("< 1", "x", "lower"),
        (None, "inference TTFT p99", "lower"),
        (None, "goodput ratio", "higher"),
        ("== 1", "bus bandwidth", "higher"),
    ],
)
def test_better_follows_the_operator_then_the_name(constraint: str | None, name: str, better: str) -> None:
    assert ms.better_of(constraint, name) == better


def _scrape(node: str, text: str) -> ex.ExporterScrape:
    return ex.parse_scrape(text, node)


def test_counter_increases_sum_over_gpus_and_leave_out_resets() -> None:
    before = _scrape(
        "n1",
        f'{ex.NVLINK_REPLAY}{{gpu="0"}} 1\n{ex.NVLINK_REPLAY}{{gpu="1"}} 5\n'
        f'{ex.ECC_DBE_VOLATILE}{{gpu="0"}} 9\n',
    )
    after = _scrape(
        "n1",
        f'{ex.NVLINK_REPLAY}{{gpu="0"}} 3\n{ex.NVLINK_REPLAY}{{gpu="1"}} 6\n'
        f'{ex.ECC_DBE_VOLATILE}{{gpu="0"}} 2\n'
        f'{ex.REMAPPED_ROWS}{{gpu="0"}} 1\n',
    )
    assert ex.counter_increases(before, after) == {ex.NVLINK_REPLAY: 3.0}
