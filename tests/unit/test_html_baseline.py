"""The HTML report shows the baseline and the change next to a measured value that has one."""

from __future__ import annotations

from typing import Any

from aicr_pytest.report import baseline as bl
from aicr_pytest.report import html

BW = {
    "name": "bus bandwidth",
    "value": 315.0,
    "unit": "GB/s",
    "constraint": ">= 300",
    "tolerance": 0.1,
    "effectiveThreshold": 270.0,
    "passed": True,
}


def doc(bw: float, run_id: str) -> dict[str, Any]:
    return {
        "reportFormat": "CTRF",
        "timestamp": "2026-01-01T00:00:00Z",
        "results": {
            "tool": {"name": "aicr-pytest"},
            "summary": {"start": 0, "stop": 1000},
            "tests": [
                {
                    "name": "nccl-all-reduce-bw",
                    "status": "passed",
                    "duration": 1000,
                    "suite": ["performance"],
                    "extra": {"aicr.measurements": [BW | {"value": bw}]},
                }
            ],
        },
        "extra": {"aicr.runId": run_id},
    }


def measurement_rows(text: str) -> str:
    start = text.index('<table class="measurements')
    return text[start : text.index("</table>", start)]


def test_baseline_and_change_columns_when_the_report_was_compared() -> None:
    report = doc(315.0, "now")
    bl.annotate(report, doc(450.0, "base"), "base.json", 10.0)
    page = html.build_page(report, html.RunInfo())
    [check] = page.checks
    assert [(m.baseline, m.change) for m in check.measurements] == [("450.00 GB/s", "-30.0 % (regressed)")]
    table = measurement_rows(html.render(page))
    assert '<th scope="col" class="num">baseline</th><th scope="col" class="num">change</th>' in table
    assert '<td class="num" data-label="baseline">450.00 GB/s</td>' in table
    assert '<td class="num" data-label="change">-30.0 % (regressed)</td>' in table


def test_no_baseline_columns_without_a_baseline() -> None:
    page = html.build_page(doc(315.0, "now"), html.RunInfo())
    assert [(m.baseline, m.change) for m in page.checks[0].measurements] == [("", "")]
    assert "baseline" not in measurement_rows(html.render(page))
