"""Hybrid verification: junit.xml and e2e.log for the run's CNCF verdicts, named after the program's
automated suite where it has a test, ours elsewhere; parseable, scrubbed, and what PRODUCT.yaml's
evidence links point at."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from aicr_pytest.evidence.cncf import hybrid
from aicr_pytest.evidence.cncf.outcomes import CheckVerdict

SECRET = "hunter2-secret-value"
ELB = "k8s-agentgat-0a1b2c3d-0123456789.us-west-2.elb.amazonaws.com"
VERDICTS = (
    CheckVerdict(
        "secure-accelerator-access", "PASS", "", 12.5, log=("granted pod saw 1 GPU", "", "ungranted: 0")
    ),
    CheckVerdict("pod-autoscaling", "FAIL", f"HPA stuck; token {SECRET} at {ELB}\nbell \x07", 61.0),
    CheckVerdict("cluster-autoscaling", "SKIP", "no autoscaler", 0.25),
    CheckVerdict("platform-health", "FAIL", "not a CNCF requirement check"),
    CheckVerdict("pod-autoscaling", "PASS"),  # a second verdict for a check: the first one counts
)


def written(tmp_path: Path) -> tuple[ET.Element, str]:
    junit, log = hybrid.write_hybrid(VERDICTS, tmp_path, secrets=[SECRET], now=0)
    assert (junit, log) == (tmp_path / "results" / "junit.xml", tmp_path / "results" / "e2e.log")
    return ET.parse(junit).getroot(), log.read_text(encoding="utf-8")


def test_junit_cases_take_the_programs_names_and_our_verdicts(tmp_path: Path) -> None:
    root, _ = written(tmp_path)
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("skipped")) == (
        "testsuites",
        "3",
        "1",
        "1",
    )
    suite = root.find("testsuite")
    assert suite is not None and suite.get("timestamp") == "1970-01-01T00:00:00Z"
    cases = suite.findall("testcase")
    assert [(c.get("name"), c.get("time")) for c in cases] == [
        ("TestSecureAcceleratorAccess", "12.500"),
        ("pod-autoscaling", "61.000"),
        ("TestAcceleratorClusterAutoscaling", "0.250"),
    ]
    assert cases[0].find("failure") is None and cases[0].find("skipped") is None
    out = cases[0].find("system-out")
    assert (
        out is not None
        and out.text == "aicr-pytest check secure-accelerator-access\ngranted pod saw 1 GPU\nungranted: 0"
    )
    failure = cases[1].find("failure")
    assert failure is not None
    assert (
        failure.get("message") == r"HPA stuck; token <redacted> at <elb-redacted>.elb.amazonaws.com bell \x07"
    )
    skipped = cases[2].find("skipped")
    assert skipped is not None and skipped.get("message") == "no autoscaler"


def test_e2e_log_reads_like_go_test_and_says_who_ran_it(tmp_path: Path) -> None:
    _, log = written(tmp_path)
    lines = log.splitlines()
    assert lines[0].startswith("# aicr-pytest ")
    assert "=== RUN   TestSecureAcceleratorAccess" in lines
    assert "--- PASS: TestSecureAcceleratorAccess (12.50s)" in lines
    assert "    granted pod saw 1 GPU" in lines
    assert "--- FAIL: pod-autoscaling (61.00s)" in lines
    assert "--- SKIP: TestAcceleratorClusterAutoscaling (0.25s)" in lines
    assert lines[-1] == "FAIL"
    assert SECRET not in log and ELB not in log and "\x07" not in log
    assert "platform-health" not in log


def test_an_all_green_run_ends_pass(tmp_path: Path) -> None:
    _, log = hybrid.write_hybrid([CheckVerdict("gang-scheduling", "PASS", duration_s=1.0)], tmp_path)
    assert log.read_text(encoding="utf-8").splitlines()[-2:] == [
        "--- PASS: TestGangScheduling (1.00s)",
        "PASS",
    ]


def test_no_verdicts_still_writes_valid_empty_files(tmp_path: Path) -> None:
    junit, log = hybrid.write_hybrid([], tmp_path)
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "0" and root.findall(".//testcase") == []
    assert log.read_text(encoding="utf-8").splitlines()[-1] == "PASS"


def test_the_evidence_fragment_names_a_case_of_the_file(tmp_path: Path) -> None:
    root, _ = written(tmp_path)
    names = {c.get("name") for c in root.iter("testcase")}
    for check in ("secure-accelerator-access", "pod-autoscaling", "cluster-autoscaling"):
        link = hybrid.junit_fragment(check)
        assert link.startswith("file://results/junit.xml#")
        assert link.split("#", 1)[1] in names
