"""`--html` for the real checks on the fake cluster: NCCL's measured value and inline sweep plot,
evidence links, inference-perf's node and wiring, and no secret on the page."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from aicr_pytest.testing.cluster import FakeCluster
from tests.cluster.test_inference_check import SENTINEL_TOKEN, run_perf
from tests.cluster.test_nccl_check import BW, run_nccl
from tests.html_dom import read_page, table_rows

KUBE_TOKEN = "kubetok-SENTINEL-9f8e7d6c5b4a"


def test_nccl_page_shows_the_measurement_the_plot_and_the_evidence(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training")
    evidence, page = pytester.path / "evidence", pytester.path / "html" / "report.html"
    tests, _ = run_nccl(pytester, fc, "--aicr-evidence-dir", str(evidence), "--aicr-html", str(page))
    assert tests[BW]["status"] == "passed"
    bw = tests[BW]["extra"]["aicr.measurements"][0]["value"]
    dom = read_page(page)
    (row,) = table_rows(dom, data_verdict="passed")
    assert row == ["bus bandwidth", f"{bw:.2f} GB/s", ">= 300", "10 %", "passes at ≥ 270.00 GB/s", "PASSED"]
    (svg,) = dom.find("svg")
    assert "constraint >= 300 GB/s" in svg[1] and "pass bound 270 GB/s" in svg[1]
    assert len(dom.find("circle")) == 25  # one point per message size of the sweep
    links = {text: a["href"] for a, text in dom.find("a") if a.get("href", "").startswith("../")}
    assert set(links) == {f"{BW}-busbw.svg", f"{BW}-launcher.log"}
    for href in links.values():  # relative to the page, and they resolve
        assert (page.parent / urllib.parse.unquote(href)).resolve().is_file()
    assert "<svg" not in (pytester.path / "ctrf.json").read_text()


def test_nccl_low_bandwidth_page_shows_the_failed_measurement(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-training", faults=["nccl-low-bandwidth"])
    page = pytester.path / "report.html"
    tests, _ = run_nccl(pytester, fc, "--aicr-html", str(page))
    assert tests[BW]["status"] == "failed"
    dom = read_page(page)
    (row,) = table_rows(dom, data_verdict="failed")
    assert row[0] == "bus bandwidth" and row[-1] == "FAILED"
    assert [(a["data-check"], a["data-status"]) for a, _ in dom.find("article")] == [(BW, "failed")]
    assert dom.find("p", id="verdict")[0][0]["data-status"] == "failed"


@pytest.mark.parametrize("scenario", ["pass", "aiperf-failed"])
def test_inference_page_has_node_and_wiring_and_no_secret(
    scenario: str, pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fc: FakeCluster = aicr_fake_cluster_factory("h100-eks-inference", token=KUBE_TOKEN)
    if scenario == "aiperf-failed":  # the pod log echoes the token
        fc.state.setdefault("inference", {}).update(
            aiperf_exit_code=1, aiperf_log=f"echo token {SENTINEL_TOKEN}\n"
        )
    monkeypatch.setenv("HF_TOKEN", SENTINEL_TOKEN)
    page = pytester.path / "report.html"
    out = run_perf(
        pytester, fc, "--aicr-html", str(page), "--aicr-evidence-dir", str(pytester.path / "evidence")
    )
    assert out.status == ("passed" if scenario == "pass" else "failed"), out.message
    assert KUBE_TOKEN in fc.kubeconfig_path.read_text()  # the planted token was really in use
    text = page.read_text()
    assert SENTINEL_TOKEN not in text and KUBE_TOKEN not in text
    dom = read_page(page)
    dts = [t for _, t in dom.find("dt")]
    dds = [t for _, t in dom.find("dd")]
    facts = dict(zip(dts[-3:], dds[-3:], strict=True))
    assert facts["node"].startswith("h100-")
    assert facts["wiring"] == "device plugin (resources.limits nvidia.com/gpu)"
    assert facts["GPUs benchmarked"] == "8 of 8"
    if scenario == "pass":
        rows = table_rows(dom, data_verdict="passed")
        assert [r[:3] for r in rows] == [
            ["inference throughput", "108000.00 tokens/sec", ">= 50000"],
            ["inference TTFT p99", "702.40 ms", "<= 2000"],
        ]
        assert [r[4] for r in rows] == ["passes at ≥ 45000.00 tokens/sec", "passes at ≤ 2200.00 ms"]
        assert "Inference throughput: 108000.00 tokens/sec" in [t for _, t in dom.find("li")]
