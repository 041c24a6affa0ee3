"""The per-node, per-GPU health table of the node-health checks in every report: CTRF ``extra``
(``aicr.healthTable``), the terminal failure lines and the HTML page, on the fake cluster's faults."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.core.records import HEALTH_TABLE_KEY
from tests.cluster.test_node_health_checks import GPU_NODES, PROFILE, run_checks
from tests.html_dom import read_page, table_rows

ROW_KEYS = {"node", "gpu", "serial", "test", "result", "detail"}
DIAG_FAIL = "DCGM error 999: GPU 7: memory test found 3 uncorrectable errors (simulated fault)"


def test_a_failing_diag_carries_the_table_in_ctrf_the_terminal_and_the_page(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-diag-fail"])
    page = pytester.path / "report.html"
    run = run_checks(
        pytester, fc, "gpu-diagnostics", extra=("--aicr-dcgm-diag-level", "2", "--aicr-html", str(page))
    )
    test = run.tests["gpu-diagnostics"]
    assert test["status"] == "failed"
    rows = test["extra"][HEALTH_TABLE_KEY]
    assert all(set(r) == ROW_KEYS for r in rows)
    assert [r["node"] for r in rows] == sorted(r["node"] for r in rows)  # node by node
    assert {r["node"] for r in rows} == set(GPU_NODES)
    assert {r["gpu"] for r in rows} == {str(i) for i in range(8)}
    (bad,) = [r for r in rows if r["result"] != "pass"]
    serial = bad["serial"]
    assert serial and bad == {
        "node": "h100-3",
        "gpu": "7",
        "serial": serial,
        "test": "memory",
        "result": "fail",
        "detail": DIAG_FAIL,
    }
    tests_per_gpu = {r["test"] for r in rows}
    assert len(rows) == 4 * 8 * len(tests_per_gpu) and "memory" in tests_per_gpu
    # the terminal: the failure line, then the rows that did not pass
    out = run.result.outlines
    i = next(n for n, line in enumerate(out) if line.startswith("FAILED gpu-diagnostics (deployment): "))
    assert out[i + 1].split() == ["node", "GPU", "serial", "test", "result", "detail"]
    assert out[i + 2].split(None, 5) == ["h100-3", "7", serial, "memory", "fail", DIAG_FAIL]
    assert not out[i + 3].startswith("  h100")
    # the page: every row, the failing one marked
    dom = read_page(page)
    assert table_rows(dom, data_result="failed") == [["h100-3", "7", serial, "memory", "FAILED", DIAG_FAIL]]
    assert len(table_rows(dom, data_result="passed")) == len(rows) - 1
    assert HEALTH_TABLE_KEY not in page.read_text()  # shown as the table, not again as JSON


def test_a_passing_diag_has_the_table_but_prints_no_rows(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    run = run_checks(pytester, fc, "gpu-diagnostics")
    test = run.tests["gpu-diagnostics"]
    assert test["status"] == "passed"
    assert {r["result"] for r in test["extra"][HEALTH_TABLE_KEY]} == {"pass"}
    assert not [line for line in run.result.outlines if line.split()[:2] == ["node", "GPU"]]


def test_an_xid_burst_is_a_failing_gpu_row(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["gpu-xid"])
    run = run_checks(pytester, fc, "gpu-health")
    test = run.tests["gpu-health"]
    assert test["status"] == "failed"
    rows = test["extra"][HEALTH_TABLE_KEY]
    assert len(rows) == 4 * 8 and {r["test"] for r in rows} == {"exporter health"}
    (bad,) = [r for r in rows if r["result"] != "pass"]
    assert (bad["node"], bad["result"]) == ("h100-3", "fail")
    assert bad["detail"].startswith("XID 79 during the ")
    assert bad["serial"].startswith("GPU-")
    out = run.result.outlines
    i = next(n for n, line in enumerate(out) if line.startswith("FAILED gpu-health (deployment): "))
    assert out[i + 2].split()[:2] == ["h100-3", bad["gpu"]]
