"""The pure half of the CRE checks (:mod:`aicr_pytest.cre`): qualification, node choice, the
Certification, reading its status and measurements, and the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest import cre
from aicr_pytest.core.errors import CheckSkip, Inconclusive, UsageError

ENTRY = cre.QUALIFIED[cre.NCCL_CHECK][("eks", "h100")]
T0 = "2026-12-01T10:00:00Z"


def node(
    name: str, gpus: str = "8", *, taints: list[dict[str, str]] | None = None, **labels: str
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"nvidia.com/gpu": gpus}},
    }


def measurement(workflow: str, created: str = T0, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "creationTimestamp": created,
            "ownerReferences": [{"kind": "Workflow", "name": workflow}],
        },
        "status": status,
    }


def test_qualification_skips_without_constraint_or_outside_eks_h100() -> None:
    assert cre.qualification(cre.GOODPUT_CHECK, ">= 0.7", "eks", "h100").variant == "nemotron5-8b"
    with pytest.raises(CheckSkip, match=r"^no nccl-cre-all-reduce-bw constraint in recipe$"):
        cre.qualification(cre.NCCL_CHECK, None, "eks", "h100")
    with pytest.raises(CheckSkip, match=r"^skipped - nccl-cre-all-reduce-bw is not qualified on gke × h100$"):
        cre.qualification(cre.NCCL_CHECK, ">= 1", "gke", "h100")
    with pytest.raises(
        CheckSkip, match=r"^cre-training-goodput currently supports only eks × h100, got  × $"
    ):
        cre.qualification(cre.GOODPUT_CHECK, ">= 1", None, None)


def test_gpu_nodes_drop_unschedulable_gpu_less_and_unselected() -> None:
    cordoned = node("c")
    cordoned["spec"]["unschedulable"] = True
    nodes = [node("a", pool="x"), node("b", pool="y"), node("cpu", "0"), cordoned]
    assert [n["metadata"]["name"] for n in cre.gpu_nodes(nodes, None)] == ["a", "b"]
    assert [n["metadata"]["name"] for n in cre.gpu_nodes(nodes, {"pool": "y"})] == ["b"]


def test_plan_caps_sorted_nodes_and_keeps_only_shared_blocking_taints() -> None:
    shared = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    bare = {"key": "nvidia.com/gpu", "effect": "NoExecute"}
    prefer = {"key": "soft", "effect": "PreferNoSchedule"}
    nodes = [
        node("n3"),
        node("n2", taints=[shared, bare, prefer]),
        node("n1", "4", taints=[shared, bare, {"key": "only-here", "effect": "NoSchedule"}]),
    ]
    p = cre.plan(cre.NCCL_CHECK, ENTRY, ">= 450 GB/s", nodes)
    assert p.nodes == ("n1", "n2") and p.gpus_per_node == 8 and p.threshold == 450.0
    assert p.taint_selectors == (
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "effect": "NoExecute"},
    )
    cert = cre.build_certification(p, "aicr-cre-nccl-x", "aicr-validation")
    assert cert["spec"]["target"] == {"nodeNames": ["n1", "n2"], "taintSelectors": list(p.taint_selectors)}
    assert cert["spec"]["categories"] == [{"domain": "communication", "variant": "nccl-all-reduce"}]
    assert cert["spec"]["nodesPerJob"] == 2


def test_plan_refuses_fewer_than_two_nodes_and_a_bad_threshold() -> None:
    with pytest.raises(cre.CreCheckFailure, match="fewer than 2 GPU nodes required for the East-West"):
        cre.plan(cre.NCCL_CHECK, ENTRY, ">= 450", [node("a")])
    with pytest.raises(UsageError):
        cre.plan(cre.NCCL_CHECK, ENTRY, ">= fast", [node("a"), node("b")])


def test_terminal_and_failure_summary() -> None:
    running = {"status": {"conditions": [{"type": "InProgress", "status": "True"}]}}
    assert cre.terminal(running) == "InProgress"
    assert cre.terminal({}) == "no condition yet"
    failed = {
        "status": {
            "conditions": [
                {"type": "InProgress", "status": "False", "reason": "Done"},
                {"type": "Failed", "status": "True", "reason": "R", "message": " m "},
                {"type": "ValidationFailed", "status": "True", "reason": "V"},
                {"type": "X", "status": "True", "message": "only message"},
            ]
        }
    }
    assert cre.terminal(failed) is True
    assert cre.failure_summary(failed) == "Failed (R): m; ValidationFailed (V); X: only message"
    assert cre.failure_summary({"status": {}}) == "no status.conditions"
    assert cre.failure_summary({"status": {"conditions": []}}) == "Failed with empty condition reason/message"
    with pytest.raises(cre.CreCheckFailure, match=r"^CRE Certification failed$"):
        cre.check_failed(cre.NCCL_CHECK, failed)
    cre.check_failed(cre.NCCL_CHECK, running)  # not failed: nothing raised


@pytest.mark.parametrize(("statuses", "message"), [
    (None, "Certification category statuses are empty"),
    ([{"domain": "training", "variant": "nemotron5-8b", "workflowRef": {"name": "w"}}],
     "Certification communication/nccl-all-reduce category status not found"),
    ([{"domain": "communication", "variant": "nccl-all-reduce", "workflowRef": None}],
     "Certification communication/nccl-all-reduce workflow reference is empty"),
])  # fmt: skip
def test_workflow_name_unreadable_is_inconclusive(statuses: Any, message: str) -> None:
    with pytest.raises(Inconclusive, match=f"^{message}$"):
        cre.workflow_name({"status": {"categoryStatuses": statuses}}, ENTRY)


def test_measurements_only_count_this_runs_workflow_and_age() -> None:
    results = [{"busBW": "12.5"}, {"busBW": 400.25}, {"busBW": "90"}]
    items = [
        measurement("wf", results=results),
        measurement("wf", results=[]),  # no results yet: passed over
        measurement("other", results=[{"busBW": "999"}]),
        measurement("wf", "2026-12-01T09:59:59Z", results=[{"busBW": "999"}]),  # before the run
    ]
    assert cre.max_bus_bandwidth(items, "wf", T0) == 400.25
    with pytest.raises(Inconclusive, match=r"^no BandwidthMeasurement with busBW results$"):
        cre.max_bus_bandwidth(items[1:], "wf", T0)
    with pytest.raises(Inconclusive, match=r"^no GoodputMeasurement status for CRE training Certification$"):
        cre.goodput_status(items[2:], "wf", T0)


@pytest.mark.parametrize(("raw", "ratio"), [("0.7671", 0.7671), (0.5, 0.5), (1, 1.0)])
def test_goodput_ratio_reads_strings_and_numbers(raw: object, ratio: float) -> None:
    assert cre.goodput_ratio({"result": raw}) == ratio


@pytest.mark.parametrize("raw", [None, "", "NaN", "x", True])
def test_goodput_ratio_unreadable_is_inconclusive(raw: object) -> None:
    with pytest.raises(Inconclusive):
        cre.goodput_ratio({"result": raw})


def test_verdict_has_no_tolerance_and_upstreams_words() -> None:
    p = cre.plan(
        cre.GOODPUT_CHECK, cre.QUALIFIED[cre.GOODPUT_CHECK][("eks", "h100")], ">= 0.7", [node("a"), node("b")]
    )
    assert cre.evaluate(p, 0.7).passed
    low = cre.evaluate(p, 0.69, {"avgTFLOPSPerGPU": 1e6, "interruptionCount": 2, "other": 1})
    assert not low.passed
    assert low.lines == (
        "CRE NeMo training goodput ratio: 0.6900",
        "Constraint: >= 0.7 → false",
        "avgTFLOPSPerGPU: 1e+06",
        "interruptionCount: 2",
    )
    assert low.failure == 'goodput ratio 0.6900 does not satisfy constraint ">= 0.7"'
    assert low.measurement.passed is False and low.measurement.effective_threshold == 0.7
