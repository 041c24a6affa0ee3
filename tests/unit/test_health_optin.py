"""Opting in to the node-health checks (``--node-health``, ``-m health``) and ``parse dcgm``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import cli
from aicr_pytest.core import catalog
from aicr_pytest.core.inputs import with_node_health
from aicr_pytest.plugin.collection import markexpr_asks_for
from aicr_pytest.testing.players.dcgm_diag import diag_document


@pytest.mark.parametrize(
    ("expr", "asks"),
    [
        ("health", True),
        ("health and deployment", True),
        ("deployment and health", True),
        ("health or conformance", True),
        ("", False),
        ("deployment", False),
        ("not health", False),
        ("deployment and not health", False),
        ("conformance", False),
        ("health and", False),  # malformed: pytest reports it
    ],
)
def test_markexpr_asks_for_health(expr: str, asks: bool) -> None:
    assert markexpr_asks_for(expr, catalog.HEALTH) is asks


def test_with_node_health_appends_each_check_once_in_its_phase() -> None:
    declared = {"deployment": ["operator-health", "gpu-health"], "performance": ["nccl-all-reduce-bw"]}
    out = with_node_health(declared)
    assert out["deployment"] == [
        "operator-health",
        "gpu-health",
        "gpu-inventory",
        "gpu-diagnostics",
        "gpu-cuda-smoke",
    ]
    assert out["performance"] == ["nccl-all-reduce-bw"]
    assert declared["deployment"] == ["operator-health", "gpu-health"]  # the recipe's list is untouched
    assert with_node_health({}) == {
        "deployment": ["gpu-inventory", "gpu-diagnostics", "gpu-health", "gpu-cuda-smoke"]
    }


# --- aicr-pytest parse dcgm ------------------------------------------------------------------------
def _write(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_parse_dcgm_exits_0_on_a_passing_diag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["parse", "dcgm", _write(tmp_path, "n1.json", diag_document("n1", 2, 2))]) == 0
    out = capsys.readouterr().out
    assert "result: pass (3 tests ran on 2 GPUs, all passed)" in out


def test_parse_dcgm_names_the_failing_gpu_test_and_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "n1.json", diag_document("n1", 2, 2, failing_gpu=1))
    assert cli.main(["parse", "dcgm", path, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "fail" and doc["exit_code"] == 1
    (line,) = doc["failures"]
    assert line.startswith("node n1 GPU 1 (serial ") and ": memory failed: DCGM error 999: " in line


def test_parse_dcgm_with_every_test_skipped_is_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = diag_document("n1", 2, 1)
    for cat in doc["DCGM Diagnostic"]["test_categories"]:
        for test in cat["tests"]:
            test["test_summary"]["status"] = "Skip"
            for r in test["results"]:
                r["status"] = "Skip"
    assert cli.main(["parse", "dcgm", _write(tmp_path, "n1.json", doc)]) != 0
