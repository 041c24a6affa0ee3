"""``tools/parity/compare.py``: two runs of the same case compare equal once run-scoped noise is
masked, and a real difference (a status, a message, an exit code) is still reported."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_TOOL = Path(__file__).resolve().parents[2] / "tools" / "parity" / "compare.py"


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    spec = importlib.util.spec_from_file_location("parity_compare", _TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(run: str, report_id: str, start: int, job: str, status: str = "passed") -> dict[str, Any]:
    test = {
        "name": "nccl-all-reduce-bw",
        "status": status,
        "duration": 12,
        "start": start,
        "stop": start + 12,
        "message": f"TrainJob nccl-bw-{job}-{run} reached 456.05 GB/s",
        "retryAttempts": [
            {"attempt": 1, "status": "failed", "start": start, "stop": start + 3, "duration": 3}
        ],
    }
    return {
        "reportFormat": "CTRF",
        "reportId": report_id,
        "timestamp": f"2026-12-05T1{start % 10}:00:00Z",
        "results": {
            "tool": {"name": "aicr-pytest"},
            "summary": {"tests": 1, "passed": 1, "start": start, "stop": start + 20, "duration": 20},
            "tests": [test],
        },
        "extra": {"aicr.runId": run},
    }


def _write(directory: Path, report: dict[str, Any], rc: int = 0) -> Path:
    directory.mkdir()
    (directory / "case.json").write_text(json.dumps(report))
    (directory / "case.rc").write_text(f"{rc}\n")
    return directory


def test_two_runs_differing_only_in_run_noise_match(compare: ModuleType, tmp_path: Path) -> None:
    # one run's object digest is digits only and reads like epoch seconds: the same token as hex
    old = _write(tmp_path / "old", _report("r1a2b3", "id-1", 1000, "1764933222"))
    new = _write(tmp_path / "new", _report("r9z8y7", "id-2", 2000, "9f3c0a7d21"))
    assert compare.compare_dirs(old, new) == []


def test_a_changed_status_is_reported(compare: ModuleType, tmp_path: Path) -> None:
    old = _write(tmp_path / "old", _report("r1", "id-1", 1000, "9f3c0a7d21"))
    new = _write(tmp_path / "new", _report("r2", "id-2", 2000, "9f3c0a7d21", status="failed"))
    assert compare.compare_dirs(old, new) == ["case: /results/tests[0]/status: 'passed' != 'failed'"]


def test_a_changed_exit_code_is_reported(compare: ModuleType, tmp_path: Path) -> None:
    old = _write(tmp_path / "old", _report("r1", "id-1", 1000, "9f3c0a7d21"))
    new = _write(tmp_path / "new", _report("r2", "id-2", 2000, "9f3c0a7d21"), rc=8)
    assert compare.compare_dirs(old, new) == ["case: exit code 0 != 8"]
