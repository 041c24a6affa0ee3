"""ai-service-metrics' inference-service step: detection and the evidence block (plain functions)."""

from __future__ import annotations

from typing import Any

from aicr_pytest.conformance import service_metrics as sm


def pod(name: str, component: str | None = None) -> dict[str, Any]:
    labels = {sm.DYNAMO_COMPONENT_LABEL: component} if component else {}
    return {"metadata": {"name": name, "labels": labels}}


def series(*names: str) -> list[dict[str, Any]]:
    return [{"metric": {"__name__": n, "pod": f"p{i}"}, "value": [0, "1"]} for i, n in enumerate(names)]


def test_dynamo_needs_a_worker_and_names_its_frontends() -> None:
    found = sm.detect_workload(
        [pod("fe", "frontend"), pod("w2", "worker"), pod("w1", "worker")], [pod("nim")]
    )
    assert found == sm.InferenceWorkload("Dynamo", "dynamo-workload", ("w1", "w2"), sm.DYNAMO_QUERY, ("fe",))
    assert found.describe() == "Dynamo in dynamo-workload (worker pods: w1, w2; frontend pods: fe)"


def test_a_frontend_alone_is_no_dynamo_service_and_nim_comes_next() -> None:
    found = sm.detect_workload([pod("fe", "frontend"), pod("other")], [pod("llama-b"), pod("llama-a")])
    assert found == sm.InferenceWorkload("NIM", "nim-workload", ("llama-a", "llama-b"), sm.NIM_QUERY)
    assert found.describe() == "NIM in nim-workload (pods: llama-a, llama-b)"
    assert sm.NIM_QUERY.startswith('{namespace="nim-workload",__name__=~"prompt_tokens_total|')


def test_nothing_running_is_no_workload() -> None:
    assert sm.detect_workload([pod("fe", "frontend")], []) is None
    assert sm.detect_workload([], []) is None


def test_series_names_are_distinct_sorted_and_skip_nameless_series() -> None:
    result = [*series("b", "a", "b"), {"metric": {"pod": "x"}}, "junk"]
    assert sm.series_names(result) == ["a", "b"]


def test_report_samples_names_and_says_how_many_more() -> None:
    workload = sm.InferenceWorkload("NIM", "nim-workload", ("n",), sm.NIM_QUERY)
    text = sm.series_report(workload, "success", series("f", "e", "d", "c", "b", "a", "a"), sample=3)
    assert text.splitlines() == [
        "Workload: NIM in nim-workload (pods: n)",
        f"Query: {sm.NIM_QUERY}",
        "Status: success",
        "Time series count: 7",
        "Metric names: a, b, c (and 3 more)",
    ]
    assert sm.series_report(workload, "success", []).splitlines()[-1] == "Time series count: 0"
