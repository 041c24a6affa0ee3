"""``--cncf-submission`` next to a run's outputs in one invocation: the phases run as well, so the
HTML page and the CTRF report are what each would be alone, and the CNCF evidence files are written
too; a FAIL of either side fails the run.  Alone, ``--cncf-submission`` still replaces the phases
(tests/cluster/test_cncf_plugin.py).  The recipe evidence bundle (``--emit-attestation``) is refused
on a simulated cluster (tests/badinput)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aicr_pytest.cli import main
from aicr_pytest.evidence.cncf.verdict import file_verdict

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
#: the deployment phase without its one check that holds its signals for a minute of real time
FAST_DEPLOYMENT = ["--phase", "deployment", "--skip-check", "expected-resources"]


def _validate(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "validate",
        "--simulate",
        "h100-eks-training",
        "-r",
        str(RECIPE),
        "-s",
        str(SNAPSHOT),
        *FAST_DEPLOYMENT,
        "--cncf-submission",
        "--evidence-dir",
        str(tmp_path / "ev"),
        *extra,
    ]


def test_one_invocation_writes_html_ctrf_and_cncf_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, ctrf = tmp_path / "page.html", tmp_path / "ctrf.json"
    args = ["-f", "gateway", "-f", "operator", "--html", str(page)]
    code = main(_validate(tmp_path, *args, "-o", str(ctrf)))
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    # the CNCF submission, as alone
    written = sorted(p.name for p in (tmp_path / "ev").glob("*.md"))
    assert written == ["SIMULATED.md", "inference-gateway.md", "robust-operator.md"]
    assert file_verdict((tmp_path / "ev" / "robust-operator.md").read_text()).status == "PASS"
    assert "Total: 2 | Passed: 1 | Failed: 0 | Skipped: 1" in captured.err
    # the run's CTRF report, as alone
    report = json.loads(ctrf.read_text())
    statuses = {t["name"]: t["status"] for t in report["results"]["tests"] if t["suite"] == ["deployment"]}
    assert statuses == {
        "operator-health": "passed",
        "gpu-operator-version": "passed",
        "check-nvidia-smi": "passed",
        "expected-resources": "skipped",
    }
    assert report["results"]["environment"]["testEnvironment"] == "SIMULATED"
    # the HTML page of the run
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "operator-health" in html
    assert captured.out == ""  # -o: the report went to the file


def test_a_failing_feature_next_to_a_passing_run_exits_8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ctrf = tmp_path / "ctrf.json"
    argv = _validate(tmp_path, "-f", "metrics", "-o", str(ctrf))
    code = main([*argv[:3], "--fault", "dcgm-exporter-no-gpu-series", *argv[3:]])
    err = capsys.readouterr().err
    assert code == 8, err[-3000:]
    assert file_verdict((tmp_path / "ev" / "accelerator-metrics.md").read_text()).status == "FAIL"
    report = json.loads(ctrf.read_text())
    assert report["results"]["summary"]["failed"] == 0  # the phases passed; the feature failed the run
