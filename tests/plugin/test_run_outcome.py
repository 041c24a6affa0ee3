"""The explicit channel between ``aicr-pytest validate`` and the plugin: a hidden pytest option in,
a published :class:`RunOutcome` out; nothing through the process environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aicr_pytest import cli
from aicr_pytest.plugin.state import RunOutcome
from tests.plugin.helpers import make_recipe

Inputs = Callable[..., tuple[Path, Path]]

PASSING_CHECK = """
import pytest

@pytest.mark.check("dra-support")
def test_dra(aicr_check):
    aicr_check.emit("RESULT: dra ok")
"""

USER_CHECKS = """
import pytest
from aicr_pytest import Inconclusive

@pytest.mark.check("operator-health")
def test_ok(aicr_check):
    aicr_check.emit("fine")

@pytest.mark.check("expected-resources")
def test_fails(aicr_check):
    aicr_check.fail("0/1 available")

@pytest.mark.check("dra-support")
def test_other(aicr_check):
    raise Inconclusive("API unreachable")
"""

REJECTING_CONFTEST = """
from aicr_pytest import UsageError

def pytest_aicr_prevalidate(checks, recipe, settings, data):
    if "operator-health" in checks:
        raise UsageError("operator-health: this site's recipes must pin the operator version")
"""
REJECTION = "operator-health: this site's recipes must pin the operator version"


class Receiver:
    """What ``validate`` does: a plugin object handed to ``pytest.main`` that receives the outcome."""

    def __init__(self) -> None:
        self.outcomes: list[RunOutcome] = []

    def pytest_aicr_run_finished(self, config: pytest.Config, outcome: RunOutcome) -> None:
        self.outcomes.append(outcome)


def test_simulate_in_process_leaves_no_environment_and_says_simulated(
    pytester: pytest.Pytester,
    write_inputs: Inputs,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("AICR_PYTEST_SIMULATED", raising=False)
    # the nested pytest.main owns PYTEST_CURRENT_TEST (and drops it when its test ends)
    environ_before = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    user = pytester.makepyfile(test_user=PASSING_CHECK)
    rp, sp = write_inputs(make_recipe(conformance=["dra-support"]))
    argv = ["validate", "-r", str(rp), "-s", str(sp), "--simulate", "h100-eks-training"]
    code = cli.main([*argv, "--", "-p", "no:cacheprovider", "--aicr-no-bundled-checks", str(user)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "AICR_PYTEST_SIMULATED" not in os.environ
    assert {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"} == environ_before
    assert "SIMULATED cluster: profile h100-eks-training, kubeconfig " in err
    header = next(line for line in err.splitlines() if line.startswith("aicr-pytest: "))
    assert "| SIMULATED cluster (aicr-pytest simulate; no real GPUs) |" in header
    report = json.loads(out)
    assert [(t["name"], t["status"]) for t in report["results"]["tests"]] == [("dra-support", "passed")]


def test_without_simulate_the_header_says_live_cluster(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    pytester.makepyfile(test_user=PASSING_CHECK)
    rp, sp = write_inputs(make_recipe(conformance=["dra-support"]))
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "test_user.py",
        "--aicr-no-bundled-checks",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(["aicr-pytest: * | live cluster | run *"])
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "test_user.py",
        "--aicr-no-bundled-checks",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-simulated=h100-eks-training",
    )
    result.stdout.fnmatch_lines(
        ["aicr-pytest: * | SIMULATED cluster (aicr-pytest simulate; no real GPUs) | run *"]
    )


def test_a_plugin_object_receives_the_run_outcome(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(
        make_recipe(deployment=["operator-health", "expected-resources"], conformance=["dra-support"])
    )
    receiver = Receiver()
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "test_user.py",
        "--aicr-no-bundled-checks",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        plugins=[receiver],
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (outcome,) = receiver.outcomes
    assert outcome.statuses == ("passed", "failed", "other")
    assert outcome.failing and not outcome.readiness_blocked and outcome.usage_error is None
    assert outcome.report is not None
    assert [t["status"] for t in outcome.report["results"]["tests"]] == ["passed", "failed", "other"]
    assert cli.exit_code_for(outcome, int(result.ret), fail_on_error=True) == cli.EXIT_FAILED
    assert cli.exit_code_for(outcome, int(result.ret), fail_on_error=False) == cli.EXIT_OK


def test_no_outcome_without_recipe(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_x():\n    assert 1\n")
    receiver = Receiver()
    result = pytester.runpytest("-p", "no:cacheprovider", plugins=[receiver])
    assert result.ret == 0
    assert receiver.outcomes == []
    assert cli.exit_code_for(None, 0, fail_on_error=True) == cli.EXIT_OK
    assert cli.exit_code_for(None, 1, fail_on_error=True) == cli.EXIT_INVALID


@pytest.mark.parametrize(
    ("outcome", "pytest_exit", "fail_on_error", "code"),
    [
        (RunOutcome(False, None, ("passed", "skipped"), {}), 0, True, 0),
        (RunOutcome(True, None, ("skipped",), {}), 1, False, 2),  # readiness block: 2 whatever
        (RunOutcome(False, "bad value", ("other",), {}), 1, False, 2),  # a check's UsageError
        (RunOutcome(False, None, ("passed",), None), 3, True, 8),  # internal error
        (RunOutcome(False, None, ("passed",), None), 4, True, 2),  # usage error
        (RunOutcome(False, None, ("passed",), None), 2, True, 5),  # interrupted
        (RunOutcome(False, None, ("other",), {}), 1, True, 8),
        (RunOutcome(False, None, ("passed",), {}, "evidence: push failed"), 1, True, 6),
        (RunOutcome(False, None, ("failed",), {}, "evidence: push failed"), 1, True, 6),  # 6 wins over 8
        (RunOutcome(False, None, ("passed",), None, "evidence: declined"), 6, True, 6),  # pytest.exit(6)
        (RunOutcome(True, None, ("skipped",), {}, "evidence: x"), 1, True, 2),  # readiness block first
    ],
)
def test_exit_code_for(outcome: RunOutcome, pytest_exit: int, fail_on_error: bool, code: int) -> None:
    assert cli.exit_code_for(outcome, pytest_exit, fail_on_error) == code


def test_user_conftest_prevalidate_usage_error_under_pytest(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    pytester.makeconftest(REJECTING_CONFTEST)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"]))
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-no-cluster"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == [f"ERROR: {REJECTION}"]
    assert "Traceback" not in result.stderr.str()
    # a recipe without that check passes the user's prevalidation
    rp, sp = write_inputs(make_recipe(conformance=["dra-support"]))
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-no-cluster"
    )
    assert result.ret == 0


def test_user_conftest_prevalidate_usage_error_under_validate(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    pytester.makeconftest(REJECTING_CONFTEST)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"]))
    proc = subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", "validate", "-r", str(rp), "-s", str(sp), "--no-cluster"],
        capture_output=True,
        text=True,
        cwd=pytester.path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [f"ERROR: {REJECTION}"]
    assert proc.stdout == ""
