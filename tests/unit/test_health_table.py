"""health.table, records.HealthRow and the terminal's health-table lines: the per-node, per-GPU table
of the node-health checks, built from what each check judged, read back fail closed."""

from __future__ import annotations

from typing import Any

from _dcgm_docs import diag_doc, dumps
from test_health_exporter import pair, scrape_text

from aicr_pytest.core import records
from aicr_pytest.health import dcgm, exporter, table
from aicr_pytest.report import terminal
from aicr_pytest.report.results import ResultAccumulator

MEM_FAIL = ("Fail", [(84, "2 uncorrectable errors")])


def rows_of(doc: dict[str, Any], node: str = "gpu-a") -> list[dict[str, str]]:
    return [r.to_json() for r in table.diag_rows(dcgm.parse_diag(dumps(doc), node))]


def test_diag_rows_are_one_per_gpu_per_test_with_serial_and_warning() -> None:
    rows = rows_of(
        diag_doc([("Hardware", "memory", {0: "Pass", 1: MEM_FAIL}), ("Hardware", "pcie", {0: "Skip"})])
    )
    assert rows == [
        {"node": "gpu-a", "gpu": "0", "serial": "SN1000", "test": "memory", "result": "pass", "detail": ""},
        {
            "node": "gpu-a",
            "gpu": "1",
            "serial": "SN1001",
            "test": "memory",
            "result": "fail",
            "detail": "DCGM error 84: 2 uncorrectable errors",
        },
        {"node": "gpu-a", "gpu": "0", "serial": "SN1000", "test": "pcie", "result": "skip", "detail": ""},
    ]


def test_a_runtime_error_an_unknown_status_and_no_results_are_other_rows() -> None:
    (row,) = rows_of(diag_doc(runtime_error="Unable to connect to the host engine"))
    assert (row["gpu"], row["test"], row["result"]) == ("", "dcgmi diag", "other")
    assert row["detail"] == "dcgmi diag reported a runtime error: Unable to connect to the host engine"
    (row,) = rows_of(diag_doc([("Hardware", "memory", {0: "ok"})], gpus=1))
    assert (row["result"], row["detail"]) == ("other", "unrecognised status 'ok'")
    (row,) = rows_of(diag_doc([], gpus=1))
    assert (row["result"], row["detail"]) == ("other", "no test results in the document")


def test_node_rows_drop_the_node_prefix() -> None:
    row = table.node_row("gpu-b", table.DIAG_TEST, "node gpu-b: the DCGM diagnostic pod p vanished")
    assert (row.node, row.gpu, row.result, row.detail) == (
        "gpu-b",
        "",
        "other",
        "the DCGM diagnostic pod p vanished",
    )


def test_exporter_rows_fail_a_gpu_with_an_xid_and_name_missing_gpus() -> None:
    before, after = pair("gpu-a", scrape_text(), scrape_text(overrides={(1, exporter.XID): 79}))
    rows = table.exporter_rows(before, after, exporter.health_thresholds(), expected_gpus=3)
    assert [(r.gpu, r.serial, r.result) for r in rows] == [
        ("0", "GPU-0000", "pass"),
        ("1", "GPU-0001", "fail"),
        ("2", "", "other"),
    ]
    assert rows[1].detail == f"XID 79 during the 1m0s window ({exporter.XID})"
    assert rows[2].detail == "no DCGM exporter series"


def acc(extra: dict[str, Any], status: str = "failed") -> ResultAccumulator:
    a = ResultAccumulator(name="gpu-diagnostics", phase="deployment", order=0, kind="check")
    a.status, a.message, a.extra = status, "node gpu-a GPU 1 (serial SN1001): memory failed", extra
    return a


def test_terminal_shows_only_the_rows_that_did_not_pass_under_the_failure_line() -> None:
    rows = rows_of(diag_doc([("Hardware", "memory", {0: "Pass", 1: MEM_FAIL})]))
    lines = terminal.failure_lines([acc({records.HEALTH_TABLE_KEY: rows})])
    assert lines == [
        "FAILED gpu-diagnostics (deployment): node gpu-a GPU 1 (serial SN1001): memory failed",
        "  node   GPU  serial  test    result  detail",
        "  gpu-a  1    SN1001  memory  fail    DCGM error 84: 2 uncorrectable errors",
    ]


def test_terminal_caps_the_rows_and_unreadable_rows_are_other() -> None:
    many = [{"node": f"n{i:03d}", "test": "t", "result": "fail"} for i in range(terminal.MAX_HEALTH_ROWS + 2)]
    lines = terminal.health_table_lines({records.HEALTH_TABLE_KEY: [{"node": ""}, *many]})
    assert len(lines) == 1 + terminal.MAX_HEALTH_ROWS + 1
    assert lines[1].split(None, 5) == ["?", "-", "-", "?", "other", "unreadable health-table row"]
    assert lines[-1] == "  … 3 more row(s) in CTRF extra aicr.healthTable"
    assert terminal.health_table_lines({records.HEALTH_TABLE_KEY: "garbage"}) == []
