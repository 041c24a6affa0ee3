"""The public API for check authors: ``from aicr_pytest import ...`` gives what a check needs, cheaply,
and a check written against it alone reports every CTRF status."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import aicr_pytest
from aicr_pytest.conformance.endpoints import EndpointAnswerError
from aicr_pytest.conformance.failures import ConformanceFailure
from aicr_pytest.core.allocmode import AllocModeError
from aicr_pytest.core.errors import CheckFailed
from aicr_pytest.cre import CreCheckFailure
from aicr_pytest.health.common import HealthCheckFailed
from aicr_pytest.inference.knobs import InferenceFailure
from aicr_pytest.kube.rbac import UndeclaredPermission
from aicr_pytest.nccl.variant import NcclCheckFailure
from tests.plugin.helpers import make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]

#: where each lazily exported name is defined
HOMES = {
    "AllocationPolicy": "aicr_pytest.core.policy",
    "CheckContext": "aicr_pytest.core.check",
    "CheckFailed": "aicr_pytest.core.errors",
    "CheckSkip": "aicr_pytest.core.errors",
    "Clock": "aicr_pytest.core.clock",
    "Cluster": "aicr_pytest.kube.client",
    "Constraint": "aicr_pytest.core.recipe",
    "DataTree": "aicr_pytest.core.datatree",
    "Inconclusive": "aicr_pytest.core.errors",
    "Measurement": "aicr_pytest.core.records",
    "Recipe": "aicr_pytest.core.recipe",
    "RunScope": "aicr_pytest.kube.run",
    "Settings": "aicr_pytest.core.settings",
    "Snapshot": "aicr_pytest.core.snapshot",
    "UsageError": "aicr_pytest.core.errors",
}

PUBLIC_API_CHECKS = """
import pytest
from aicr_pytest import CheckContext, CheckFailed, CheckSkip, Inconclusive, Measurement

@pytest.mark.check("operator-health")
def test_passes(aicr_check: CheckContext) -> None:
    aicr_check.emit("RESULT: gpu-operator pods running: 1/1")
    aicr_check.measure(Measurement(name="ready pods", value=1.0, constraint=">= 1", passed=True))

@pytest.mark.check("expected-resources")
def test_fails(aicr_check: CheckContext) -> None:
    raise CheckFailed("Deployment gpu-operator/gpu-operator: 0/1 available")

@pytest.mark.check("gpu-operator-version")
def test_skips(aicr_check: CheckContext) -> None:
    raise CheckSkip("no Deployment.gpu-operator.version constraint in recipe")

@pytest.mark.check("check-nvidia-smi")
def test_inconclusive(aicr_check: CheckContext) -> None:
    raise Inconclusive("pod aicr-nvidia-smi-x vanished while waiting")
"""


def test_every_public_name_resolves_to_its_definition() -> None:
    assert sorted(n for n in aicr_pytest.__all__ if n != "__version__") == sorted(HOMES)
    for name, module in HOMES.items():
        assert getattr(aicr_pytest, name) is getattr(importlib.import_module(module), name), name
    assert set(aicr_pytest.__all__) <= set(dir(aicr_pytest))
    with pytest.raises(AttributeError, match="no attribute 'NotAnExport'"):
        _ = aicr_pytest.NotAnExport  # type: ignore[attr-defined]


def test_importing_the_package_imports_only_the_exception_types() -> None:
    code = (
        "import sys, aicr_pytest\n"
        "print(sorted(m for m in sys.modules if m.startswith('aicr_pytest')), 'pytest' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "['aicr_pytest', 'aicr_pytest.core', 'aicr_pytest.core.errors', 'aicr_pytest.core.lazy', "
        "'aicr_pytest.core.version'] False"
    )


@pytest.mark.parametrize(
    "failure",
    [
        InferenceFailure,
        NcclCheckFailure,
        UndeclaredPermission,
        AllocModeError,
        ConformanceFailure,
        EndpointAnswerError,
        HealthCheckFailed,
        CreCheckFailure,
    ],
    ids=lambda cls: cls.__name__,
)
def test_every_family_failure_is_a_check_failed(failure: type[Exception]) -> None:
    assert issubclass(failure, aicr_pytest.CheckFailed)


def test_deployments_check_failed_is_the_shared_one() -> None:
    from aicr_pytest import deployment
    from aicr_pytest.deployment import common

    assert deployment.CheckFailed is common.CheckFailed is CheckFailed is aicr_pytest.CheckFailed
    assert issubclass(CheckFailed, AssertionError)  # pytest reports it failed, not as an error


def test_a_check_on_the_public_api_reports_each_status(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    pytester.makepyfile(test_user=PUBLIC_API_CHECKS)
    rp, sp = write_inputs(
        make_recipe(
            deployment=["operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"]
        )
    )
    out = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "test_user.py", "--aicr-no-bundled-checks",
        "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out),
    )  # fmt: skip
    assert result.ret == 1
    tests = {t["name"]: t for t in read_ctrf(out)["results"]["tests"]}
    verdicts = {name: (t["status"], t.get("message")) for name, t in tests.items()}
    assert verdicts == {
        "operator-health": ("passed", None),
        "expected-resources": ("failed", "Deployment gpu-operator/gpu-operator: 0/1 available"),
        "gpu-operator-version": ("skipped", "no Deployment.gpu-operator.version constraint in recipe"),
        "check-nvidia-smi": ("other", "pod aicr-nvidia-smi-x vanished while waiting"),
    }
    passed = tests["operator-health"]
    assert passed["stdout"] == ["RESULT: gpu-operator pods running: 1/1"]
    [measurement] = passed["extra"]["aicr.measurements"]
    assert (measurement["name"], measurement["value"], measurement["passed"]) == ("ready pods", 1.0, True)


CONTEXT_OUTCOMES = """
import pytest
from aicr_pytest import CheckContext

@pytest.fixture
def needs_operator(aicr_check: CheckContext) -> None:
    aicr_check.skip("no GPU operator in this recipe")

@pytest.fixture
def broken_fixture(aicr_check: CheckContext) -> None:
    aicr_check.fail("the fixture found 0/1 ready")

@pytest.mark.check("operator-health")
def test_fails(aicr_check: CheckContext) -> None:
    aicr_check.emit("looked")
    aicr_check.fail("gpu-operator pods running: 0/1")

@pytest.mark.check("expected-resources")
def test_skips_in_a_fixture(needs_operator: None) -> None:
    raise AssertionError("not reached")

@pytest.mark.check("gpu-operator-version")
def test_fails_in_a_fixture(broken_fixture: None) -> None:
    raise AssertionError("not reached")
"""


def test_the_context_raises_our_own_outcomes_and_the_plugin_maps_them(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    """``aicr_check.fail``/``skip`` raise :class:`CheckFailed`/:class:`CheckSkip` (no pytest below the
    plugin); they end the check ``failed``/``skipped`` from the test and from its fixtures alike."""
    from aicr_pytest.core.check import CheckContext

    ctx = CheckContext(name="x", phase="deployment", timeout_s=1, constraints=[])
    with pytest.raises(CheckFailed, match=r"^boom$"):
        ctx.fail("boom")
    with pytest.raises(aicr_pytest.CheckSkip, match=r"^not here$"):
        ctx.skip("not here")
    pytester.makepyfile(test_user=CONTEXT_OUTCOMES)
    rp, sp = write_inputs(
        make_recipe(deployment=["operator-health", "expected-resources", "gpu-operator-version"])
    )
    out = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "test_user.py", "--aicr-no-bundled-checks",
        "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out),
    )  # fmt: skip
    assert result.ret == 1
    tests = {t["name"]: t for t in read_ctrf(out)["results"]["tests"]}
    assert {name: (t["status"], t.get("message")) for name, t in tests.items()} == {
        "operator-health": ("failed", "gpu-operator pods running: 0/1"),
        "expected-resources": ("skipped", "no GPU operator in this recipe"),
        "gpu-operator-version": ("failed", "the fixture found 0/1 ready"),
    }
    assert tests["operator-health"]["stdout"] == ["looked"]
    assert tests["expected-resources"]["stdout"] == [
        'level=INFO msg=SKIP reason="no GPU operator in this recipe"'
    ]
