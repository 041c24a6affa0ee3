"""AICR's structured CTRF ``extra`` on skipped checks: ``skipReason`` exactly where AICR gives one.

Each skip kind the run produces is run through the plugin and its CTRF entry compared whole: a
domain skip with a code carries ``{"skipReason": code}``; ``--skip-check`` carries
``named-in-skip-checks``; ``--no-cluster``, ``--fail-fast``, a failed readiness pre-flight, a
plain ``check.skip`` and a code outside AICR's closed set carry none.  A check-level skip also ends
the check's ``stdout`` with AICR's slog line (``level=INFO msg=SKIP reason="…"``, quoted as Go
quotes it); the run's own skips keep the reason in ``message`` only.  Every report stays valid
against the official CTRF schema.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.helpers import make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]

CHECKS = """
import pytest
from aicr_pytest.core.errors import CheckSkip

@pytest.mark.check("check-nvidia-smi")
def test_nvidia_smi(aicr_check):
    raise CheckSkip("GPU nodes busy with existing workloads: [a]", "nodes-busy")

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    raise CheckSkip('not applicable to the "prod" cluster at C:\\\\aicr', "customer-prod-cluster")

@pytest.mark.check("gpu-operator-version")
def test_gpu_operator_version(aicr_check):
    aicr_check.emit("Detected GPU Operator version: v25.3.0")
    aicr_check.skip("no Deployment.gpu-operator.version constraint in recipe")

@pytest.mark.check("expected-resources")
def test_expected_resources(aicr_check):
    assert False, "Deployment gpu-operator/gpu-operator: 0/1 available"

@pytest.mark.check("dra-support")
def test_dra(aicr_check):
    aicr_check.emit("DRA ok")
"""


def _run(pytester: pytest.Pytester, rp: Path, sp: Path, *args: str) -> dict[str, Any]:
    """Run :data:`CHECKS` in place of the bundled checks; returns the CTRF report."""
    out = pytester.path / "ctrf.json"
    pytester.makepyfile(test_user=CHECKS)
    inputs = [f"--recipe={rp}", f"--snapshot={sp}", f"--aicr-ctrf-report={out}"]
    pytester.runpytest("-p", "no:cacheprovider", "test_user.py", "--aicr-no-bundled-checks", *inputs, *args)
    return read_ctrf(out)


def _entries(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in report["results"]["tests"] if t["suite"] != ["readiness"]}


def _valid(report: dict[str, Any], validator: Any) -> None:
    validator.validate(report)


def test_domain_skip_codes_and_check_skip(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any
) -> None:
    rp, sp = write_inputs(
        make_recipe(deployment=["check-nvidia-smi", "operator-health", "gpu-operator-version"])
    )
    report = _run(pytester, rp, sp)
    _valid(report, ctrf_validator)
    tests = _entries(report)
    smi = tests["check-nvidia-smi"]
    assert (smi["status"], smi["message"], smi["extra"]) == (
        "skipped",
        "GPU nodes busy with existing workloads: [a]",
        {"skipReason": "nodes-busy"},
    )
    # a code AICR never mints is not published under its key; a plain check.skip has no code
    assert tests["operator-health"]["status"] == "skipped" and "extra" not in tests["operator-health"]
    assert tests["gpu-operator-version"]["status"] == "skipped"
    assert "extra" not in tests["gpu-operator-version"]
    # each check-level skip ends the check's stdout with the slog line, after what it printed
    assert smi["stdout"] == ['level=INFO msg=SKIP reason="GPU nodes busy with existing workloads: [a]"']
    assert tests["operator-health"]["message"] == 'not applicable to the "prod" cluster at C:\\aicr'
    assert tests["operator-health"]["stdout"] == [
        'level=INFO msg=SKIP reason="not applicable to the \\"prod\\" cluster at C:\\\\aicr"'
    ]
    assert tests["gpu-operator-version"]["stdout"] == [
        "Detected GPU Operator version: v25.3.0",
        'level=INFO msg=SKIP reason="no Deployment.gpu-operator.version constraint in recipe"',
    ]


def test_skip_check_code(pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any) -> None:
    rp, sp = write_inputs(make_recipe(deployment=["operator-health", "gpu-operator-version"]))
    report = _run(pytester, rp, sp, "--aicr-skip-check", "operator-health")
    _valid(report, ctrf_validator)
    assert _entries(report)["operator-health"]["extra"] == {"skipReason": "named-in-skip-checks"}
    assert "stdout" not in _entries(report)["operator-health"]  # the run skipped it: message only
    assert "extra" not in _entries(report)["gpu-operator-version"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--aicr-no-cluster",), "skipped - no-cluster mode"),
        (("--aicr-fail-fast",), "skipped due to previous phase failure"),
    ],
    ids=["no-cluster", "fail-fast"],
)
def test_run_level_skips_carry_no_code(
    pytester: pytest.Pytester,
    write_inputs: Inputs,
    ctrf_validator: Any,
    args: tuple[str, ...],
    message: str,
) -> None:
    rp, sp = write_inputs(make_recipe(deployment=["expected-resources"], conformance=["dra-support"]))
    report = _run(pytester, rp, sp, *args)
    _valid(report, ctrf_validator)
    dra = _entries(report)["dra-support"]
    assert (dra["status"], dra["message"]) == ("skipped", message)
    assert "extra" not in dra  # AICR records these in message only
    assert "stdout" not in dra


def test_readiness_skip_carries_no_code(
    pytester: pytest.Pytester, write_inputs: Inputs, ctrf_validator: Any
) -> None:
    rp, sp = write_inputs(
        make_recipe(
            constraints=[{"name": "K8s.server.version", "value": ">= 9.0"}], conformance=["dra-support"]
        )
    )
    report = _run(pytester, rp, sp)
    _valid(report, ctrf_validator)
    dra = _entries(report)["dra-support"]
    assert (dra["status"], dra["message"]) == ("skipped", "skipped - readiness pre-flight failed")
    assert "extra" not in dra
    assert "stdout" not in dra
