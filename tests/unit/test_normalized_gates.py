"""``--normalize-gates``: the inference throughput floor scaled to the node shape (core.normgates)."""

from __future__ import annotations

import pytest

from aicr_pytest import inference as inf
from aicr_pytest.core import normgates
from aicr_pytest.core.recipe import Constraint


def knobs() -> inf.InferenceKnobs:
    cons = [
        Constraint(name="inference-throughput", value=">= 50000"),
        Constraint(name="inference-ttft-p99", value="<= 2000"),
    ]
    return inf.preflight(cons, ["dynamo-platform"], {}, {})


def test_a_healthy_4_gpu_node_fails_the_raw_floor_and_passes_the_normalized_one() -> None:
    # a whole 4-GPU node against an H100 recipe calibrated on 8-GPU nodes: 50000 → 25000 per 4 GPUs
    raw = inf.evaluate(24000.0, 1500.0, knobs(), 4, 4)
    assert not raw.passed and raw.normalized is None
    norm = inf.evaluate(24000.0, 1500.0, knobs(), 4, 4, normgates.calibrated_gpus("H100"))
    assert norm.passed
    assert (
        "Throughput gate normalized (--normalize-gates) to 4 GPUs of a 8-GPU calibrated node: 50000 → 25000 "
        "tokens/sec"
    ) in norm.lines
    assert norm.normalized == {
        "raw": {"threshold": pytest.approx(45000.0), "passed": False},
        "normalized": {"threshold": pytest.approx(22500.0), "passed": True},
        "gpusUsed": 4,
        "calibratedGpusPerNode": 8,
        "source": normgates.CALIBRATED_SOURCE,
    }
    thr = norm.measurements[0].to_json()
    assert thr["effectiveThreshold"] == pytest.approx(22500.0) and thr["passed"] is True


def test_normalization_can_also_fail_and_unknown_accelerators_keep_the_floor() -> None:
    assert not inf.evaluate(20000.0, 1500.0, knobs(), 4, 4, 8).passed  # below 0.9 × 25000
    assert normgates.calibrated_gpus("gb200") == 4
    assert normgates.calibrated_gpus("mi300x") is None
    assert normgates.normalized_throughput(50000.0, 0, 8) == 50000.0
    assert normgates.nccl_factor("efa", 8) == 1.0 and normgates.nccl_factor("efa", 1) is None


def test_the_nccl_table_keeps_nvswitch_shapes_and_leaves_unlisted_ones_raw() -> None:
    assert normgates.fabric_class("nvls", "efa", "eks") == "nvls"
    assert normgates.fabric_class("default", "efa", "gke") == "tcpxo"
    assert normgates.fabric_class("net", "roce", "aks") == "roce"
    assert normgates.normalized_nccl(300.0, "efa", 8) == (300.0, 1.0)
    assert normgates.normalized_nccl(300.0, "efa", 2) == (300.0, None)
