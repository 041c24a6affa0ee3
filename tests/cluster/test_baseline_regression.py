"""Baselines and the regression gate end to end, on both backends: the ``nccl-bandwidth-regression``
fault (bus bandwidth 30 % below healthy, still above the example recipe's ``>= 300`` floor).

1. a healthy run, recorded with ``--history``, passes;
2. the regressed run passes without ``--max-regression`` (``--baseline auto`` finds run 1 in the
   history; the change is in CTRF ``insights`` and on the terminal);
3. the regressed run with ``--baseline <run 1's CTRF> --max-regression 10`` fails ``nccl-all-reduce-bw``
   with one line naming the value, the baseline, the change and the baseline's run id.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aicr_pytest.report import history as hs
from tests.cluster.check_runner import PhaseRun, run_on_backend
from tests.data_trees import catalog_data_tree
from tests.harness.backends import K8sBackend

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
PROFILE = "h100-eks-training"
BW = "nccl-all-reduce-bw"
FAULT = "nccl-bandwidth-regression"
GATE = re.compile(
    r"^nccl-all-reduce-bw: bus bandwidth (?P<value>\d+\.\d\d) GB/s is (?P<pct>\d+\.\d)% worse than the "
    r"baseline (?P<base>\d+\.\d\d) GB/s \(run (?P<run>\S+); --max-regression 10%\)$"
)


def _run(pytester: pytest.Pytester, backend: K8sBackend, faults: tuple[str, ...], *extra: str) -> PhaseRun:
    backend.seed_profile(PROFILE, faults)
    return run_on_backend(
        pytester, backend, phase="performance", recipe=RECIPE, snapshot=SNAPSHOT, extra=extra
    )


def _bandwidth(run: PhaseRun) -> float:
    return float(run.tests[BW]["extra"]["aicr.measurements"][0]["value"])


def test_a_regression_above_the_floor_fails_only_with_max_regression(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, tmp_path: Path
) -> None:
    db = tmp_path / "history.db"
    healthy = _run(pytester, k8s_backend, (), "--aicr-history", str(db))
    assert healthy.tests[BW]["status"] == "passed", healthy.tests[BW].get("message")
    base_bw = _bandwidth(healthy)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(healthy.ctrf_text)

    page = tmp_path / "report.html"
    reported = _run(
        pytester,
        k8s_backend,
        (FAULT,),
        "--aicr-history",
        str(db),
        "--aicr-baseline",
        "auto",
        "--aicr-html",
        str(page),
    )
    test = reported.tests[BW]
    assert test["status"] == "passed", test.get("message")
    low = _bandwidth(reported)
    assert 300 <= low <= base_bw * 0.75, (low, base_bw)  # above the floor, about 30 % down
    values = test["insights"]["extra"]["aicr.baseline"]
    assert [(v["name"], v["baseline"], v["current"], v["regressed"]) for v in values] == [
        ("bus bandwidth", base_bw, low, False)
    ]
    assert -34.0 < values[0]["changePct"] < -26.0  # 30 % off the peak, with the player's run-to-run noise
    assert reported.report["baseline"]["extra"] == {"aicr.runId": healthy.run_id}
    assert (
        f'<td class="num" data-label="baseline">{base_bw:.2f} GB/s</td>' in page.read_text()
    )  # the HTML report
    reported.result.stdout.fnmatch_lines(
        [f"*against the baseline (run {healthy.run_id})*", "nccl-all-reduce-bw: bus bandwidth * GB/s: -*%*"]
    )
    with hs.SqliteHistory.open(db, create=False) as store:
        assert [r.run_id for r in store.runs()] == [healthy.run_id, reported.run_id]

    gated = _run(
        pytester, k8s_backend, (FAULT,), "--aicr-baseline", str(baseline), "--aicr-max-regression", "10"
    )
    test = gated.tests[BW]
    assert test["status"] == "failed"
    found = GATE.match(test["message"])
    assert found is not None, test["message"]
    assert float(found["base"]) == round(base_bw, 2) and found["run"] == healthy.run_id
    assert 26.0 < float(found["pct"]) < 34.0
    assert gated.result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.fake_only("the NCCL table's lookup is backend-independent; the fake covers the wiring")
def test_normalize_gates_records_the_raw_and_the_normalized_nccl_verdict(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    run = _run(pytester, k8s_backend, (), "--aicr-normalize-gates")
    test = run.tests[BW]
    assert test["status"] == "passed", test.get("message")
    gate = test["extra"]["aicr.normalizedGate"]
    assert {k: gate[k] for k in ("fabric", "gpusPerNode", "factor")} == {
        "fabric": "efa",
        "gpusPerNode": 8,
        "factor": 1.0,
    }
    assert gate["raw"] == gate["normalized"] == {"threshold": 270.0, "passed": True}
    plain = _run(pytester, k8s_backend, ())
    assert "aicr.normalizedGate" not in plain.tests[BW]["extra"]  # off by default


@pytest.mark.fake_only("the catalog overlay is read the same way on either backend")
def test_a_catalog_max_regression_gates_one_check_without_the_flag(
    pytester: pytest.Pytester, k8s_backend: K8sBackend, tmp_path: Path
) -> None:
    data = catalog_data_tree(tmp_path / "data", BW, maxRegression=10)
    healthy = _run(pytester, k8s_backend, (), "--aicr-data", str(data))  # the same data tree in both runs
    assert healthy.tests[BW]["status"] == "passed", healthy.tests[BW].get("message")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(healthy.ctrf_text)
    gated = _run(pytester, k8s_backend, (FAULT,), "--aicr-baseline", str(baseline), "--aicr-data", str(data))
    test = gated.tests[BW]
    assert test["status"] == "failed"
    assert test["message"].endswith(f"(run {healthy.run_id}; the catalog's maxRegression 10%)")
