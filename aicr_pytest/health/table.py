"""The per-node, per-GPU health table of ``gpu-diagnostics`` and ``gpu-health`` (pure).

Each check turns what it judged into :class:`~aicr_pytest.core.records.HealthRow` rows, node by
node, before it concludes, so a failing run carries the table too: CTRF
``extra["aicr.healthTable"]`` (:data:`~aicr_pytest.core.records.HEALTH_TABLE_KEY`), the rows that
did not pass under the check's terminal failure line, the whole table on the HTML page.

* ``gpu-diagnostics``: one row per entity per DCGM test (:func:`diag_rows`), its verdict and
  DCGM's warning text; a node without a document is one ``other`` row saying why (:func:`node_row`).
* ``gpu-health``: one row per GPU over the window (:func:`exporter_rows`): ``fail`` with the
  errors seen, ``other`` when its series could not be judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aicr_pytest.core.records import HealthResult, HealthRow
from aicr_pytest.health.dcgm import GPU_GROUP, DcgmDiag
from aicr_pytest.health.exporter import (
    MSG_NO_GPU,
    ExporterScrape,
    HealthThresholds,
    gpu_label,
    gpu_problems,
)

#: the test column of a row about a whole diag (a node without a document, a runtime error)
DIAG_TEST: Final = "dcgmi diag"
#: the test column of ``gpu-health``'s rows
HEALTH_TEST: Final = "exporter health"
DETAIL_RUNTIME_ERROR: Final = "dcgmi diag reported a runtime error: {error}"
DETAIL_NO_RESULTS: Final = "no test results in the document"
DETAIL_UNKNOWN: Final = "unrecognised status {raw!r}"


def _strip(line: str, prefix: str) -> str:
    return line[len(prefix) :] if line.startswith(prefix) else line


def node_row(node: str, test: str, line: str) -> HealthRow:
    """A whole node that could not be judged (``other``); ``line`` loses its ``node X:`` prefix."""
    return HealthRow(node=node, test=test, result="other", detail=_strip(line, f"node {node}: "))


def diag_rows(diag: DcgmDiag) -> list[HealthRow]:
    """One row per entity per test of one node's diag, in the document's order."""
    if diag.runtime_error is not None:
        detail = DETAIL_RUNTIME_ERROR.format(error=diag.runtime_error)
        return [HealthRow(node=diag.node, test=DIAG_TEST, result="other", detail=detail)]
    rows: list[HealthRow] = []
    for test in diag.tests:
        for r in test.results:
            is_gpu = r.group == GPU_GROUP
            result: HealthResult = "other" if r.status == "unknown" else r.status
            detail = "; ".join(w.describe() for w in r.warnings)
            if r.status == "unknown":
                detail = "; ".join(filter(None, (DETAIL_UNKNOWN.format(raw=r.raw_status), detail)))
            rows.append(
                HealthRow(
                    node=diag.node,
                    gpu=str(r.entity_id) if is_gpu else f"{r.group} {r.entity_id}",
                    serial=(diag.serial(r.entity_id) or "") if is_gpu else "",
                    test=test.name,
                    result=result,
                    detail=detail,
                )
            )
    return rows or [HealthRow(node=diag.node, test=DIAG_TEST, result="other", detail=DETAIL_NO_RESULTS)]


def exporter_rows(
    before: ExporterScrape, after: ExporterScrape, thresholds: HealthThresholds, *, expected_gpus: int | None
) -> list[HealthRow]:
    """One row per GPU of one node's two scrapes (the GPUs ``expected_gpus`` names but the exporter
    does not report are ``other`` rows)."""
    node = after.node
    first, second = before.gpus(), after.gpus()
    rows: list[HealthRow] = []
    for gpu, series in second.items():
        failures, unsure = gpu_problems(first.get(gpu), series, node, thresholds)
        result: HealthResult = "fail" if failures else "other" if unsure else "pass"
        prefix = f"node {node} {gpu_label(series)}: "
        detail = "; ".join(_strip(line, prefix) for line in (*failures, *unsure))
        rows.append(
            HealthRow(
                node=node, gpu=gpu, serial=series.uuid or "", test=HEALTH_TEST, result=result, detail=detail
            )
        )
    for i in range(expected_gpus or 0):
        if str(i) not in second:
            line = MSG_NO_GPU.format(node=node, gpu=i)
            rows.append(
                HealthRow(
                    node=node,
                    gpu=str(i),
                    test=HEALTH_TEST,
                    result="other",
                    detail=_strip(line, f"node {node} GPU {i}: "),
                )
            )
    return rows


def sort_rows(rows: Sequence[HealthRow]) -> list[HealthRow]:
    """Node by node (name order); a node's rows keep their order."""
    return sorted(rows, key=lambda r: r.node)


__all__ = [
    "DIAG_TEST",
    "HEALTH_TEST",
    "diag_rows",
    "exporter_rows",
    "node_row",
    "sort_rows",
]
