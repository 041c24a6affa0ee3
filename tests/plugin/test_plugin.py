"""Plugin behaviour through pytester: collection, selection, ordering, outcomes, CTRF."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.helpers import every_check_recipe, make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]

USER_CHECKS = """
import pytest
from aicr_pytest import Inconclusive

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    aicr_check.emit("Found 1 gpu-operator pod(s):")
    aicr_check.emit("RESULT: operator pods running: 1/1")

@pytest.mark.check("expected-resources")
def test_expected_resources(aicr_check):
    aicr_check.emit("Namespace gpu-operator: Active")
    assert False, "Deployment gpu-operator/gpu-operator: 0/1 available"

@pytest.mark.check("gpu-operator-version")
def test_gpu_operator_version(aicr_check):
    aicr_check.skip("no Deployment.gpu-operator.version constraint in recipe")

@pytest.mark.check("check-nvidia-smi")
def test_nvidia_smi(aicr_check):
    raise Inconclusive("pod aicr-nvidia-smi-x vanished while waiting")

@pytest.mark.check("dra-support")
def test_dra(aicr_check):
    aicr_check.emit("DRA ok")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    if "test_user.py" in args:  # user-defined checks stand in for the bundled ones
        args = (*args, "--aicr-no-bundled-checks")
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_inactive_without_recipe(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_x():\n    assert 1\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)


def test_bundled_checks_collected_without_paths(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    rp, sp = write_inputs(
        make_recipe(deployment=["operator-health", "check-nvidia-smi"], performance=["inference-perf"])
    )
    out = pytester.path / "ctrf.json"
    result = run(
        pytester,
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-cluster",
        "--aicr-ctrf-report",
        str(out),
    )
    assert result.ret == 0
    report = read_ctrf(out)
    names = [t["name"] for t in report["results"]["tests"]]
    assert names == ["operator-health", "check-nvidia-smi", "inference-perf"]
    assert all(t["status"] == "skipped" for t in report["results"]["tests"])


def test_every_catalog_check_has_a_bundled_implementation(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    """No catalog check is a stand-in: a recipe declaring all of them runs a real test for each."""
    from aicr_pytest.core import catalog

    rp, sp = write_inputs(every_check_recipe())
    out = pytester.path / "ctrf.json"
    result = run(
        pytester,
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-cluster",
        "--aicr-ctrf-report",
        str(out),
    )
    tests = read_ctrf(out)["results"]["tests"]
    assert sorted(t["name"] for t in tests) == sorted(c.name for c in catalog.CATALOG)
    assert {t["message"] for t in tests} == {"skipped - no-cluster mode"}
    assert not any("aicr.notImplemented" in (t.get("extra") or {}) for t in tests)
    assert result.ret == 0


def test_a_declared_check_nothing_implements_is_named_not_dropped_silently(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    """With --aicr-no-bundled-checks and no user implementation, the declared check is named in a warning."""
    pytester.makepyfile(test_user="def test_unrelated():\n    assert True\n")
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"], conformance=["gang-scheduling"]))
    result = run(
        pytester, "test_user.py", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-no-bundled-checks"
    )
    result.stdout.fnmatch_lines(
        ["*declared check(s) with no collected implementation, not run: operator-health, gang-scheduling*"]
    )


def test_outcome_mapping_and_ctrf_schema(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any
) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(
        make_recipe(
            deployment=["check-nvidia-smi", "gpu-operator-version", "expected-resources", "operator-health"],
            conformance=["dra-support"],
        )
    )
    out = pytester.path / "ctrf.json"
    result = run(
        pytester,
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-ctrf-report",
        str(out),
        "--aicr-no-bundled-checks",
    )
    assert result.ret != 0
    report = read_ctrf(out)
    ctrf_validator.validate(report)
    tests = {t["name"]: t for t in report["results"]["tests"]}
    # catalog order, not recipe order
    assert list(tests) == [
        "operator-health",
        "expected-resources",
        "gpu-operator-version",
        "check-nvidia-smi",
        "dra-support",
    ]
    assert tests["operator-health"]["status"] == "passed"
    assert tests["operator-health"]["stdout"] == [
        "Found 1 gpu-operator pod(s):",
        "RESULT: operator pods running: 1/1",
    ]
    assert tests["expected-resources"]["status"] == "failed"
    assert tests["expected-resources"]["message"] == "Deployment gpu-operator/gpu-operator: 0/1 available"
    assert tests["gpu-operator-version"]["status"] == "skipped"
    assert (
        tests["gpu-operator-version"]["message"] == "no Deployment.gpu-operator.version constraint in recipe"
    )
    assert tests["check-nvidia-smi"]["status"] == "other"
    assert tests["check-nvidia-smi"]["message"] == "pod aicr-nvidia-smi-x vanished while waiting"
    assert all(
        t["suite"] == [t_phase]
        for t, t_phase in zip(tests.values(), ["deployment"] * 4 + ["conformance"], strict=True)
    )
    summary = report["results"]["summary"]
    assert (summary["tests"], summary["passed"], summary["failed"], summary["skipped"], summary["other"]) == (
        5,
        2,
        1,
        1,
        1,
    )
    assert report["results"]["tool"]["name"] == "aicr-pytest"
    assert isinstance(report["results"]["tool"]["version"], str)
    # RESULT: lines echoed without the prefix; phase summary table printed
    result.stdout.fnmatch_lines(["*aicr results*", "operator pods running: 1/1", "*aicr phase summary*"])
    result.stdout.fnmatch_lines(["deployment*failed*1*1*1*1"])
    result.stdout.fnmatch_lines(["*1 other*"])


def test_phase_markers_select(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"], conformance=["dra-support"]))
    result = run(
        pytester,
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "-m",
        "conformance",
        "--strict-markers",
        "-v",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 passed*deselected*"])
    result.stdout.fnmatch_lines(["*test_dra*dra-support*PASSED*"])


def test_phase_option_orders_and_filters(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"], conformance=["dra-support"]))
    out = pytester.path / "ctrf.json"
    run(
        pytester,
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-phase",
        "conformance",
        "--aicr-phase",
        "deployment",
        "--aicr-ctrf-report",
        str(out),
    )
    assert [t["name"] for t in read_ctrf(out)["results"]["tests"]] == ["dra-support", "operator-health"]


@pytest.mark.parametrize(
    ("recipe_kwargs", "expected"),
    [
        (
            {"deployment": ["operator-healthh"]},
            'unknown check "operator-healthh" in validation.deployment.checks',
        ),
        (
            {"conformance": ["operator-health"]},
            'check "operator-health" is listed under validation.conformance.checks'
            " but belongs to the deployment phase",
        ),
    ],
)
def test_bad_check_names_are_usage_errors(
    pytester: pytest.Pytester, write_inputs: Inputs, recipe_kwargs: dict[str, Any], expected: str
) -> None:
    rp, sp = write_inputs(make_recipe(**recipe_kwargs))
    result = run(pytester, "--recipe", str(rp), "--snapshot", str(sp))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: {expected}*valid checks — deployment: operator-health, expected-resources*"]
    )


def test_readiness_block_skips_everything_and_reports_readiness(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any
) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    recipe = make_recipe(
        constraints=[
            {"name": "K8s.server.version", "value": ">= 1.34"},
            {"name": "OS.release.ID", "value": "rhel", "severity": "warning"},
            {"name": "OS.release.VERSION_ID", "value": "== 24.04"},
        ],
        deployment=["operator-health"],
        conformance=["dra-support"],
    )
    rp, sp = write_inputs(recipe)
    out = pytester.path / "ctrf.json"
    result = run(
        pytester, "test_user.py", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out)
    )
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ['readiness constraint failed: name=K8s.server.version expected=">= 1.34" actual=v1.33.5-eks-abc']
    )
    result.stdout.fnmatch_lines(["warning: readiness constraint failed: name=OS.release.ID*"])
    report = read_ctrf(out)
    ctrf_validator.validate(report)
    tests = report["results"]["tests"]
    readiness = [t for t in tests if t["suite"] == ["readiness"]]
    assert [(t["name"], t["status"]) for t in readiness] == [
        ("K8s.server.version", "failed"),
        ("OS.release.ID", "failed"),
        ("OS.release.VERSION_ID", "passed"),
    ]
    checks = [t for t in tests if t["suite"] != ["readiness"]]
    assert [(t["name"], t["status"], t["message"]) for t in checks] == [
        ("operator-health", "skipped", "skipped - readiness pre-flight failed"),
        ("dra-support", "skipped", "skipped - readiness pre-flight failed"),
    ]


def test_warning_severity_does_not_block(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    recipe = make_recipe(
        constraints=[{"name": "OS.release.ID", "value": "rhel", "severity": "warning"}],
        conformance=["dra-support"],
    )
    rp, sp = write_inputs(recipe)
    result = run(pytester, "test_user.py", "--recipe", str(rp), "--snapshot", str(sp))
    result.assert_outcomes(passed=1)


def test_missing_snapshot_value_blocks_fail_closed(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    recipe = make_recipe(
        constraints=[{"name": "GPU.smi.nonexistent", "value": ">= 1"}], deployment=["operator-health"]
    )
    rp, sp = write_inputs(recipe)
    result = run(pytester, "--recipe", str(rp), "--snapshot", str(sp), "--aicr-no-cluster")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["readiness constraint failed: name=GPU.smi.nonexistent*"])


def test_no_cluster_skips_behavioral_and_opens_no_connection(
    pytester: pytest.Pytester, write_inputs: Inputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    connects: list[Any] = []
    real_connect = socket.socket.connect
    # Only the run's own thread: the session's control-plane test controllers (daemon threads polling
    # their apiserver, started by earlier tests on this worker) share the patched class.
    run_thread = threading.get_ident()

    def spy(self: socket.socket, address: Any) -> Any:
        if threading.get_ident() == run_thread:
            connects.append(address)
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", spy)
    recipe = make_recipe(
        deployment=["operator-health"],
        phase_constraints={"deployment": [{"name": "GPU.smi.driver-version", "value": ">= 570"}]},
    )
    rp, sp = write_inputs(recipe)
    out = pytester.path / "ctrf.json"
    result = run(
        pytester,
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-cluster",
        "--aicr-ctrf-report",
        str(out),
    )
    assert result.ret == 0
    tests = read_ctrf(out)["results"]["tests"]
    assert [(t["name"], t["status"], t.get("message")) for t in tests] == [
        ("operator-health", "skipped", "skipped - no-cluster mode"),
        ("GPU.smi.driver-version", "passed", None),
    ]
    assert connects == []


def test_snapshot_phase_constraint_fails_closed_on_missing_value(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    recipe = make_recipe(
        deployment=[], phase_constraints={"deployment": [{"name": "GPU.smi.missing-key", "value": ">= 570"}]}
    )
    rp, sp = write_inputs(recipe)
    out = pytester.path / "ctrf.json"
    result = run(
        pytester,
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-cluster",
        "--aicr-ctrf-report",
        str(out),
    )
    assert result.ret != 0
    (test,) = read_ctrf(out)["results"]["tests"]
    assert test["status"] == "failed"
    assert test["message"].startswith("GPU.smi.missing-key: ")


def test_no_cluster_requires_snapshot(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    rp, _ = write_inputs()
    result = run(pytester, "--recipe", str(rp), "--aicr-no-cluster")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --no-cluster requires --snapshot*"])


def test_fail_fast_skips_later_phases(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(make_recipe(deployment=["expected-resources"], conformance=["dra-support"]))
    out = pytester.path / "ctrf.json"
    run(
        pytester,
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-fail-fast",
        "--aicr-ctrf-report",
        str(out),
    )
    tests = read_ctrf(out)["results"]["tests"]
    assert [(t["name"], t["status"], t.get("message")) for t in tests] == [
        ("expected-resources", "failed", "Deployment gpu-operator/gpu-operator: 0/1 available"),
        ("dra-support", "skipped", "skipped due to previous phase failure"),
    ]
    # without --fail-fast every phase runs
    run(pytester, "test_user.py", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out))
    assert [t["status"] for t in read_ctrf(out)["results"]["tests"]] == ["failed", "passed"]


def test_other_trips_fail_fast(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(make_recipe(deployment=["check-nvidia-smi"], conformance=["dra-support"]))
    out = pytester.path / "ctrf.json"
    run(
        pytester,
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-fail-fast",
        "--aicr-ctrf-report",
        str(out),
    )
    assert [t["status"] for t in read_ctrf(out)["results"]["tests"]] == ["other", "skipped"]


def test_stdout_capped_and_truncated(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    pytester.makepyfile(
        test_user="""
import pytest
@pytest.mark.check("operator-health")
def test_many(aicr_check):
    for i in range(1200):
        aicr_check.emit(f"line {i}")
    aicr_check.emit("x" * 600)
"""
    )
    rp, sp = write_inputs()
    out = pytester.path / "ctrf.json"
    run(pytester, "test_user.py", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out))
    (test,) = read_ctrf(out)["results"]["tests"]
    assert len(test["stdout"]) == 1000
    assert test["stdout"][0] == "line 201"
    assert test["stdout"][-1] == "x" * 512 + "... [truncated 88 chars]"


def test_ctrf_to_stdout_and_empty_tests_list(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    rp, sp = write_inputs(make_recipe())
    result = run(pytester, "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", "-")
    text = result.stdout.str()
    start = text.index("{")
    doc, _ = json.JSONDecoder().raw_decode(text[start:])
    assert doc["results"]["tests"] == []
    assert doc["results"]["summary"]["tests"] == 0


def test_xdist_keeps_collection_order(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any
) -> None:
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(
        make_recipe(
            deployment=["operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"],
            conformance=["dra-support"],
        )
    )
    out = pytester.path / "ctrf.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-ctrf-report",
        str(out),
        "--aicr-no-bundled-checks",
    )
    assert result.ret != 0
    report = read_ctrf(out)
    ctrf_validator.validate(report)
    assert [t["name"] for t in report["results"]["tests"]] == [
        "operator-health",
        "expected-resources",
        "gpu-operator-version",
        "check-nvidia-smi",
        "dra-support",
    ]
    assert [t["status"] for t in report["results"]["tests"]] == [
        "passed",
        "failed",
        "skipped",
        "other",
        "passed",
    ]


def test_yaml_12_scalars_in_recipe(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    """YAML 1.1 would read `on` as a boolean; Go's YAML 1.2 reader (and ours) keeps the string."""
    recipe = make_recipe(
        constraints=[{"name": "OS.release.ID", "value": "on"}], deployment=["operator-health"]
    )
    text = (
        __import__("aicr_pytest.core.yamlio", fromlist=["dump"])
        .dump(recipe)
        .replace("value: 'on'", "value: on")
    )
    assert "value: on" in text
    rp, sp = write_inputs(text)
    result = run(pytester, "--recipe", str(rp), "--snapshot", str(sp), "--aicr-no-cluster")
    result.stdout.fnmatch_lines(
        ['readiness constraint failed: name=OS.release.ID expected="on" actual=ubuntu*']
    )


def test_xdist_fail_fast_and_phase_barrier(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    """Under -n 2 a later phase waits for earlier phases (other workers' results included)."""
    pytester.makepyfile(test_user=USER_CHECKS)
    rp, sp = write_inputs(
        make_recipe(deployment=["operator-health", "expected-resources"], conformance=["dra-support"])
    )
    out = pytester.path / "ctrf.json"
    pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "test_user.py",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-fail-fast",
        "--aicr-ctrf-report",
        str(out),
        "--aicr-no-bundled-checks",
    )
    tests = read_ctrf(out)["results"]["tests"]
    assert [(t["name"], t["status"]) for t in tests] == [
        ("operator-health", "passed"),
        ("expected-resources", "failed"),
        ("dra-support", "skipped"),
    ]
    assert tests[2]["message"] == "skipped due to previous phase failure"


def test_aicr_clock_is_the_core_system_clock(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_clock="""
from aicr_pytest.core.clock import SYSTEM_CLOCK, SystemClock

def test_clock(aicr_clock):
    assert aicr_clock is SYSTEM_CLOCK and isinstance(aicr_clock, SystemClock)
"""
    )
    run(pytester).assert_outcomes(passed=1)
