"""Bad nodes, labelled or tainted: the verdicts and the patches (pure)."""

from __future__ import annotations

from typing import Any

from aicr_pytest.health.inventory import node_verdicts as inventory_verdicts
from aicr_pytest.health.nodemarks import (
    LABEL,
    REASON_ANNOTATION,
    NodeVerdict,
    change_lines,
    node_verdicts,
    plan_marks,
)


def row(node: str, result: str, gpu: str = "0", detail: str = "") -> dict[str, str]:
    return {"node": node, "gpu": gpu, "test": "exporter health", "result": result, "detail": detail}


def test_a_failing_row_fails_the_node_and_all_passing_rows_pass_it() -> None:
    extra = {"aicr.healthTable": [row("a", "pass"), row("b", "pass"), row("b", "fail", "7", "XID 79")]}
    got = node_verdicts([("gpu-health", extra)])
    assert got == {
        "a": NodeVerdict("a", "passed", (), ("gpu-health",)),
        "b": NodeVerdict("b", "failed", ("gpu-health: GPU 7 exporter health: XID 79",), ("gpu-health",)),
    }
    assert got["b"].reason == "gpu-health: GPU 7 exporter health: XID 79"


def test_an_undecided_node_is_left_alone_and_a_failure_elsewhere_wins() -> None:
    health = {"aicr.healthTable": [row("a", "other"), row("b", "pass"), row("c", "pass")]}
    inventory = {
        "aicr.gpuInventory": {"verdicts": {"b": {"result": "fail", "detail": "7 of 8 GPUs allocatable"}}}
    }
    got = node_verdicts([("gpu-health", health), ("gpu-inventory", inventory)])
    assert sorted(got) == ["b", "c"]  # a: undecided, never marked healthy
    assert got["b"].verdict == "failed"
    assert got["b"].reasons == ("gpu-inventory: 7 of 8 GPUs allocatable",)
    assert got["c"].verdict == "passed"


def test_isolation_suspects_fail_and_unreadable_extra_names_no_node() -> None:
    got = node_verdicts(
        [
            ("nccl-all-reduce-bw", {"aicr.ncclIsolation": {"suspects": ["n3"]}}),
            ("gpu-health", {"aicr.healthTable": "garbage"}),
            ("gpu-inventory", {"aicr.gpuInventory": {"verdicts": {"n1": {"result": "???"}}}}),
        ]
    )
    assert list(got) == ["n3"]
    assert got["n3"].reasons == ("nccl-all-reduce-bw: named by bad-node isolation",)


def test_inventory_verdicts_from_its_lines() -> None:
    got = inventory_verdicts(
        ["a", "b", "c"], ["node b: 7 of 8 GPUs allocatable"], ["node c: driver report unreadable: x"]
    )
    assert got == {
        "a": {"result": "pass", "detail": ""},
        "b": {"result": "fail", "detail": "7 of 8 GPUs allocatable"},
        "c": {"result": "other", "detail": "driver report unreadable: x"},
    }


def node(labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None, **ann: str) -> Any:
    return {
        "metadata": {"name": "n", "resourceVersion": "7", "labels": labels or {}, "annotations": dict(ann)},
        "spec": {"taints": taints or []},
    }


FAILED = NodeVerdict("n", "failed", ("gpu-health: GPU 7: XID 79",), ("gpu-health",))
PASSED = NodeVerdict("n", "passed", (), ("gpu-health",))
OURS = {"key": LABEL, "value": "failed", "effect": "NoSchedule"}
OTHER = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_a_failed_node_gets_label_reason_and_taint_with_its_resource_version() -> None:
    plan = plan_marks(node(taints=[OTHER]), FAILED, label=True, taint=True)
    assert plan.patch == {
        "metadata": {
            "labels": {LABEL: "failed"},
            "annotations": {REASON_ANNOTATION: "gpu-health: GPU 7: XID 79"},
            "resourceVersion": "7",
        },
        "spec": {"taints": [OTHER, OURS]},
    }
    assert plan.changes == (
        f"label {LABEL}=failed",
        f"annotation {REASON_ANNOTATION} set",
        f"taint {LABEL}=failed:NoSchedule added",
    )


def test_a_recovered_node_is_relabelled_and_untainted_and_other_taints_stay() -> None:
    was = node({LABEL: "failed"}, [OTHER, OURS], **{REASON_ANNOTATION: "old"})
    plan = plan_marks(was, PASSED, label=True, taint=True)
    assert plan.patch == {
        "metadata": {
            "labels": {LABEL: "passed"},
            "annotations": {REASON_ANNOTATION: None},
            "resourceVersion": "7",
        },
        "spec": {"taints": [OTHER]},
    }
    assert plan.changes == (
        f"label {LABEL}=passed (was failed)",
        f"annotation {REASON_ANNOTATION} removed",
        f"taint {LABEL}=failed:NoSchedule removed",
    )


def test_nothing_to_change_is_no_patch_and_taint_alone_leaves_labels() -> None:
    assert plan_marks(node({LABEL: "passed"}), PASSED, label=True, taint=True).patch is None
    plan = plan_marks(node(), FAILED, label=False, taint=True)
    assert plan.patch == {"metadata": {"resourceVersion": "7"}, "spec": {"taints": [OURS]}}


def test_a_long_reason_is_one_capped_line() -> None:
    v = NodeVerdict("n", "failed", ("a\nb" * 400,), ())
    assert "\n" not in v.reason and len(v.reason) == 512 and v.reason.endswith("...")


def test_change_lines() -> None:
    records = [
        {"node": "a", "verdict": "passed", "changes": []},
        {"node": "b", "verdict": "failed", "changes": ["x", "y"]},
        {"node": "c", "verdict": "failed", "error": "403 Forbidden"},
    ]
    assert change_lines(records) == [
        "node a passed: unchanged",
        "node b failed: x; y",
        "node c failed: not changed: 403 Forbidden",
    ]
