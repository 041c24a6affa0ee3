"""CTRF a dashboard can follow run to run, reruns counted once, and JUnit properties as JSON.

A run of user checks in place of the bundled ones: one passes, one fails, one is flaky (fails its
first attempt, passes its second), one fails every attempt.  With pytest-rerunfailures'
``--reruns 1`` each check is still ONE CTRF test, with ``retries``/``retryAttempts`` and ``flaky``
where a rerun passed; JUnit stays as pytest-rerunfailures writes it (the suite counts 4 tests).
"""

from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.helpers import make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]

CHECKS = """
import pathlib
import pytest

COUNTER = pathlib.Path(__file__).with_name("attempts.txt")

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    aicr_check.emit("operator ok")
    aicr_check.extra["aicr.note"] = {"nodes": ["a", "b"], "ready": 2}

@pytest.mark.check("expected-resources")
def test_expected_resources(aicr_check):
    assert False, "DaemonSet nvidia-device-plugin 3/4 ready"

@pytest.mark.check("gpu-operator-version")
def test_gpu_operator_version(aicr_check):
    n = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(n + 1))
    assert n >= 1, "first attempt fails"

@pytest.mark.check("check-nvidia-smi")
def test_nvidia_smi(aicr_check):
    raise RuntimeError("always broken")
"""

CHECK_NAMES = ["operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"]


def _run(pytester: pytest.Pytester, write_inputs: Inputs, *args: str) -> tuple[dict[str, Any], ET.Element]:
    rp, sp = write_inputs(make_recipe(deployment=CHECK_NAMES))
    out = pytester.path / "ctrf.json"
    xml = pytester.path / "junit.xml"
    (pytester.path / "attempts.txt").unlink(missing_ok=True)
    pytester.makepyfile(test_user=CHECKS)
    pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "test_user.py",
        "--aicr-no-bundled-checks",
        f"--recipe={rp}",
        f"--snapshot={sp}",
        f"--aicr-ctrf-report={out}",
        f"--junitxml={xml}",
        *args,
    )
    return read_ctrf(out), ET.parse(xml).getroot()


def _tests(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in report["results"]["tests"]}


def test_reruns_are_one_test_each_with_retries(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any
) -> None:
    report, junit = _run(pytester, write_inputs, "--reruns", "1")
    ctrf_validator.validate(report)
    tests = _tests(report)
    assert [t["name"] for t in report["results"]["tests"]] == CHECK_NAMES
    summary = report["results"]["summary"]
    assert {k: summary[k] for k in ("tests", "passed", "failed", "other", "flaky")} == {
        "tests": 4,
        "passed": 2,
        "failed": 1,
        "other": 1,
        "flaky": 1,
    }
    assert "retries" not in tests["operator-health"]
    flaky = tests["gpu-operator-version"]
    assert flaky["status"] == "passed" and flaky["flaky"] is True and flaky["retries"] == 1
    assert [(a["attempt"], a["status"]) for a in flaky["retryAttempts"]] == [(1, "failed")]
    assert flaky["retryAttempts"][0]["message"] == "first attempt fails"
    assert "trace" not in flaky  # the final attempt passed
    failed = tests["expected-resources"]
    assert (failed["status"], failed["retries"], failed["flaky"]) == ("failed", 1, False)
    assert failed["message"] == "DaemonSet nvidia-device-plugin 3/4 ready"
    other = tests["check-nvidia-smi"]
    assert (other["status"], other["retries"], other["flaky"]) == ("other", 1, False)
    assert other["message"] == "RuntimeError: always broken"
    # JUnit is left as pytest-rerunfailures writes it: the suite counts 4 tests, and a test case
    # element is written per attempt (the last one of a check carries its final outcome)
    suite = junit.find(".//testsuite")
    assert suite is not None and suite.get("tests") == "4" and suite.get("failures") == "2"
    cases = junit.findall(".//testcase")
    assert sorted({str(c.get("name")) for c in cases}) == sorted(
        [
            "test_operator_health[operator-health]",
            "test_expected_resources[expected-resources]",
            "test_gpu_operator_version[gpu-operator-version]",
            "test_nvidia_smi[check-nvidia-smi]",
        ]
    )


def test_dashboard_fields(pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any) -> None:
    first, junit = _run(pytester, write_inputs)
    second, _ = _run(pytester, write_inputs)
    ctrf_validator.validate(first)
    assert first["specVersion"] == "1.0.0"
    assert uuid.UUID(first["reportId"]) != uuid.UUID(second["reportId"])
    assert first["runId"] == first["extra"]["aicr.runId"]
    ids = {t["name"]: t["id"] for t in first["results"]["tests"]}
    assert ids == {t["name"]: t["id"] for t in second["results"]["tests"]}  # stable run after run
    assert len(set(ids.values())) == len(ids)
    for t in first["results"]["tests"]:
        uuid.UUID(t["id"])
        assert t["testId"] == t["id"]
        assert t["filePath"] == "test_user.py"
        assert first["results"]["summary"]["start"] <= t["start"] <= t["stop"]
        assert t["stop"] <= first["results"]["summary"]["stop"]
    tests = _tests(first)
    assert "DaemonSet nvidia-device-plugin 3/4 ready" in tests["expected-resources"]["trace"]
    assert "RuntimeError: always broken" in tests["check-nvidia-smi"]["trace"]
    assert "trace" not in tests["operator-health"]
    env = first["results"]["environment"]
    assert env["testEnvironment"] == "cluster" and "healthy" not in env
    assert env["extra"]["aicr.recipe"] == "h100-eks-ubuntu-training"
    assert env["extra"]["aicr.simulated"] is False
    assert env["extra"]["aicr.cluster"] == "the kubeconfig's current context"
    assert "aicr.simulated" not in first["extra"]
    # JUnit properties are JSON, not Python reprs
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert json.loads(props["aicr.extra"]) == {"aicr.note": {"nodes": ["a", "b"], "ready": 2}}
    assert "aicr.simulated" not in props


def test_same_check_other_recipe_other_id() -> None:
    from aicr_pytest.report.ctrf import stable_test_id

    a = stable_test_id("h100-eks-ubuntu-training", "deployment", "operator-health")
    assert a == stable_test_id("h100-eks-ubuntu-training", "deployment", "operator-health")
    assert a != stable_test_id("gb200-eks-ubuntu-training", "deployment", "operator-health")
    assert a != stable_test_id("h100-eks-ubuntu-training", "conformance", "operator-health")


def test_simulated_run_says_so_in_ctrf_and_junit(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any
) -> None:
    report, junit = _run(pytester, write_inputs, "--aicr-simulated=h100-healthy")
    ctrf_validator.validate(report)
    env = report["results"]["environment"]
    assert env["testEnvironment"] == "SIMULATED" and env["healthy"] is False
    assert env["reportName"].startswith("SIMULATED ")
    assert env["extra"]["aicr.simulated"] is True
    assert env["extra"]["aicr.cluster"] == "SIMULATED cluster (profile h100-healthy)"
    assert report["extra"]["aicr.simulated"] is True
    assert all(t["extra"]["aicr.simulated"] is True for t in report["results"]["tests"])
    suite_props = {p.get("name"): p.get("value") for p in junit.find(".//testsuite/properties") or []}
    assert suite_props == {"aicr.simulated": "true", "aicr.simulatedProfile": "h100-healthy"}
    for case in junit.iter("testcase"):
        case_props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert case_props["aicr.simulated"] == "true"
