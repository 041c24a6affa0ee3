"""The simulator's node-health players print what the real tools print: schema-valid documents the
domain parsers read back, with the faults where the docs say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from aicr_pytest.health import dcgm
from aicr_pytest.testing.players.dcgm_diag import diag_document


def _schema(reference_dir: Path) -> dict[str, Any]:
    return json.loads((reference_dir / "dcgm" / "dcgm_diag_schema.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.compat
@pytest.mark.parametrize("level", [1, 2, 3, 4])
@pytest.mark.parametrize("failing", [None, 7])
def test_diag_documents_are_schema_valid(reference_dir: Path, level: int, failing: int | None) -> None:
    doc = diag_document("h100-3", 8, level, failing_gpu=failing)
    jsonschema.Draft7Validator(_schema(reference_dir)).validate(doc)


def test_a_healthy_document_passes_the_domain_verdict() -> None:
    diag = dcgm.parse_diag(json.dumps(diag_document("n1", 8, 2)), "n1")
    assert [t.name for t in diag.tests] == ["software", "pcie", "memory"]
    assert dcgm.check_diagnostics([diag], level=2, expected_gpus={"n1": 8}).startswith(
        "DCGM diagnostics level 2 passed on 1 node: 8 GPUs"
    )


def test_the_failing_gpu_fails_only_the_memory_test() -> None:
    diag = dcgm.parse_diag(json.dumps(diag_document("n1", 8, 3, failing_gpu=7)), "n1")
    problems = dcgm.node_problems(diag, expected_gpus=8)
    assert len(problems.failures) == 1
    assert problems.failures[0].startswith("node n1 GPU 7 (serial ")
    assert ": memory failed: DCGM error 999: " in problems.failures[0]


def test_level_1_runs_no_memory_test() -> None:
    diag = dcgm.parse_diag(json.dumps(diag_document("n1", 8, 1, failing_gpu=7)), "n1")
    assert [t.name for t in diag.tests] == ["software"]
