"""The report package without pytest: RunResults folding reports, terminal lines, the CTRF writer,
and the one system clock."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock, SystemClock
from aicr_pytest.core.constraints import ConstraintResult
from aicr_pytest.report import ctrf, terminal
from aicr_pytest.report import results as r
from aicr_pytest.report.results import ResultAccumulator, RunResults


def _identity(name: str, phase: str, order: int, kind: str = "check") -> dict[str, Any]:
    return {r.PROP_NAME: name, r.PROP_PHASE: phase, r.PROP_ORDER: order, r.PROP_KIND: kind}


def test_run_results_fold_setup_call_teardown() -> None:
    res = RunResults()
    ident = _identity("operator-health", "deployment", 0)
    assert res.add("t::a", "setup", 0.25, ident) is None
    assert res.add("t::a", "call", 1.0, {**ident, r.PROP_STATUS: "failed", r.PROP_MESSAGE: "0/1"}) is None
    # a teardown error does not overturn the call's verdict; it becomes a cleanup warning
    teardown = {**ident, r.PROP_STATUS: "other", r.PROP_CLEANUP_WARNING: "delete timed out"}
    acc = res.add(
        "t::a", "teardown", 0.5, {**teardown, r.PROP_HINTS: ["kubectl delete x", "kubectl delete x"]}
    )
    assert acc is not None
    assert (acc.status, acc.message, acc.duration_s) == ("failed", "0/1", 1.75)
    assert acc.extra == {"aicr.cleanupWarning": "delete timed out"}
    assert res.cleanup_hints == ["kubectl delete x"]
    assert res.pending == {} and res.finished == [acc]


def test_run_results_ignore_foreign_reports_and_keep_usage_errors() -> None:
    res = RunResults()
    assert res.add("t::plain", "call", 1.0, {}) is None and res.pending == {}
    ident = _identity("dra-support", "conformance", 1)
    res.add("t::b", "setup", 0, ident)
    res.add("t::b", "call", 0, {**ident, r.PROP_STATUS: "other", r.PROP_USAGE_ERROR: "bad --x"})
    res.add("t::b", "teardown", 0, ident)
    ident0 = _identity("operator-health", "deployment", 0)
    res.add("t::a", "setup", 0, {**ident0, r.PROP_STATUS: "skipped", r.PROP_MESSAGE: "no"})
    res.add("t::a", "teardown", 0, ident0)
    assert res.usage_error == "bad --x"
    assert res.statuses() == ("skipped", "other")  # run order, not arrival order


def test_header_line_modes() -> None:
    line = terminal.header_line("recipe x", snapshot=None, no_cluster=False, simulated=None, run_id="abc")
    assert line == "aicr-pytest: recipe x | snapshot none | live cluster | run abc"
    line = terminal.header_line("recipe x", snapshot="s.yaml", no_cluster=False, simulated="p", run_id="abc")
    assert "| SIMULATED cluster (aicr-pytest simulate; no real GPUs) |" in line
    line = terminal.header_line("recipe x", snapshot="s.yaml", no_cluster=True, simulated="p", run_id="abc")
    assert line == "aicr-pytest: recipe x | snapshot s.yaml | --no-cluster (offline: snapshot only) | run abc"


def test_preflight_lines() -> None:
    results = [
        ConstraintResult(name="K8s.server.version", expected=">= 1.34", actual="v1.33", passed=False),
        ConstraintResult(
            name="OS.release.ID", expected="rhel", actual="ubuntu", passed=False, severity="warning"
        ),
        ConstraintResult(name="GPU.smi.gpu-count", expected="8", actual="8", passed=True),
    ]
    lines = terminal.preflight_lines(["data tree: x"], results, blocked=True)
    assert lines[0] == "warning: data tree: x"
    assert lines[1].startswith("readiness constraint failed: name=K8s.server.version")
    assert lines[2].startswith("warning: readiness constraint failed: name=OS.release.ID")
    passed = 'readiness constraint passed: name=GPU.smi.gpu-count expected="8" actual=8'
    assert lines[3] == passed  # AICR logs each passing constraint too
    assert lines[4] == "readiness pre-flight failed: no check runs and nothing touches the cluster"
    assert len(lines) == 5
    assert terminal.preflight_lines([], results[2:], blocked=False) == [passed]


def test_summary_sections() -> None:
    accs = [
        ResultAccumulator("b", "conformance", 1, "check", status="passed", stdout=["RESULT: two", "x"]),
        ResultAccumulator("a", "deployment", 0, "check", status="failed", stdout=["RESULT: one"]),
    ]
    sections = terminal.summary_sections(
        ["deployment", "conformance"], accs, readiness_blocked=False, cleanup_hints=["kubectl get x"]
    )
    assert [s.title for s in sections] == ["aicr results", "aicr failures", "aicr phase summary"]
    assert sections[0].lines == ["one", "two"]
    assert sections[1].lines == ["FAILED a (deployment): no message"]
    assert sections[2].lines == [
        "phase         status   passed failed skipped other",
        "deployment    failed        0      1       0     0",
        "conformance   passed        1      0       0     0",
        "kubectl get x",
    ]
    (only,) = terminal.summary_sections(["performance"], [], readiness_blocked=True)
    assert only.lines[1:] == ["readiness pre-flight failed: every check was skipped"]  # no result, no row


def test_ctrf_write_to_file_and_stdout(tmp_path: Path) -> None:
    report = ctrf.build_report([], start_ms=1000, stop_ms=2000)
    target = tmp_path / "deep" / "dir" / "ctrf.json"
    ctrf.write(report, str(target), io.StringIO())
    assert json.loads(target.read_text()) == report
    out = io.StringIO()
    ctrf.write(report, "-", out)
    assert out.getvalue() == ctrf.dumps(report) and out.getvalue().endswith("}\n")


def test_report_imports_core_only() -> None:
    code = (
        "import sys, aicr_pytest.report.ctrf, aicr_pytest.report.outcome, aicr_pytest.report.results, "
        "aicr_pytest.report.terminal; "
        "banned = ('aicr_pytest.plugin', 'aicr_pytest.kube', 'aicr_pytest.testing', 'aicr_pytest.cli'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'kubernetes') "
        "or m.startswith(banned)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_system_clock_is_monotonic_and_a_clock() -> None:
    clock: Clock = SYSTEM_CLOCK
    assert isinstance(clock, SystemClock)
    before = time.monotonic()
    reading = clock.time()
    assert before <= reading <= time.monotonic()
    clock.sleep(-1)  # negative sleeps return at once
    assert clock.time() >= reading


def test_failure_lines_never_carry_control_characters_from_a_message() -> None:
    from aicr_pytest.report.results import ResultAccumulator

    acc = ResultAccumulator("check-nvidia-smi", "deployment", 0, "check", status="failed")
    acc.message = "nvidia-smi said: \x1b]0;owned\x07\x1b[2J done\nsecond line"
    (line,) = terminal.failure_lines([acc])
    assert line == (
        "FAILED check-nvidia-smi (deployment): nvidia-smi said: \\x1b]0;owned\\x07\\x1b[2J done second line"
    )


def test_failure_line_carries_the_first_issue_cut_at_the_width_never_at_a_newline() -> None:
    from aicr_pytest.deployment.expected_resources import MSG_EXPECTED_FAILED
    from aicr_pytest.report.results import ResultAccumulator

    acc = ResultAccumulator("expected-resources", "deployment", 0, "check", status="failed")
    acc.message = MSG_EXPECTED_FAILED.format(count=1, lines="  DaemonSet nvidia-device-plugin 3/4 ready")
    expected = (
        "FAILED expected-resources (deployment): [NOT_FOUND] expected resource check failed: 1 issue(s): "
        "DaemonSet nvidia-device-plugin 3/4 ready"
    )
    assert terminal.failure_lines([acc]) == [expected]
    assert terminal.failure_lines([acc], width=200) == [expected]
    (cut,) = terminal.failure_lines([acc], width=100)
    assert cut == expected[:99] + "…" and len(cut) == 100
    two = "  DaemonSet a 3/4 ready\n  Deployment b 0/1 available"
    acc.message = MSG_EXPECTED_FAILED.format(count=2, lines=two)
    (line,) = terminal.failure_lines([acc])
    assert line.endswith("2 issue(s): DaemonSet a 3/4 ready; Deployment b 0/1 available")
    acc.message = "\n\n"
    assert terminal.failure_lines([acc]) == ["FAILED expected-resources (deployment): no message"]


def test_baseline_and_insights_have_their_places() -> None:
    from aicr_pytest.report.results import ResultAccumulator, RunIdentity, build_ctrf

    acc = ResultAccumulator("nccl-all-reduce-bw", "performance", 0, "check")
    base = {"reportId": "6f1c0d0e-5a8b-4c1e-9a57-6a1c2b7e4d10", "source": "history"}
    per_test = {"nccl-all-reduce-bw": {"averageTestDuration": {"current": 10, "baseline": 9, "change": 1}}}
    doc = build_ctrf(
        [acc],
        start_ms=1000,
        run_id="abc",
        identity=RunIdentity(recipe="h100-eks-ubuntu-training"),
        baseline=base,
        insights={"runsAnalyzed": 2},
        test_insights=per_test,
    )
    assert doc["baseline"] == base and doc["insights"] == {"runsAnalyzed": 2}
    assert doc["results"]["tests"][0]["insights"] == per_test["nccl-all-reduce-bw"]
    plain = build_ctrf([acc], start_ms=1000, run_id="abc")
    assert "baseline" not in plain and "insights" not in plain
    assert "insights" not in plain["results"]["tests"][0]
