"""Adding a check is one catalog row, one test function and its family code (docs: "Adding a check").

A toy check is added exactly that way and run end to end under pytest with a recipe declaring it.
The three pieces stand in a temporary place each: the row is appended to ``catalog.CATALOG``
(every lookup reads the tuple when it is used), the test function lives in a temporary folder that
stands in for the bundled ``checks/``, and the family is a small package on ``sys.path``.  Nothing
else is told about the toy check: its test is parametrized from the row, the row's hooks module
is registered and validates the recipe before any check runs, and CTRF reports the check.
A toy conformance check is less still: a row and its family function (the bundled conformance test
runs it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.plugin import bundled
from tests.plugin.helpers import make_recipe, read_ctrf

Inputs = Callable[..., tuple[Path, Path]]

TOY = catalog.CheckSpec(
    "toy-answer",
    "deployment",
    60,
    "toy: the answer is the one the recipe expects",
    test="deployment/test_toy.py::test_toy_answer",
    hooks="toy_family.hooks",
)

#: the family: the decision, a plain function
TOY_FAMILY = '''
ANSWER = 42


def verdict(expected: str) -> str | None:
    """Why the answer fails the recipe's expectation (None: it meets it)."""
    if int(expected) == ANSWER:
        return None
    return f"the answer is {ANSWER}, the recipe expects {expected}"
'''

#: the family's hooks module: what only this check understands, checked before anything runs
TOY_HOOKS = """
from aicr_pytest import UsageError
from aicr_pytest.core import catalog


def pytest_aicr_prevalidate(checks, recipe, settings, data):
    if __name__ not in catalog.hook_modules(checks):
        return
    expected = recipe.phase_constraint("deployment", "toy-answer")
    if expected is None or not expected.value.strip().isdigit():
        raise UsageError("toy-answer: validation.deployment.constraints needs a whole-number toy-answer")
"""

#: the test function: wiring only, no check marker (the row names it)
TOY_TEST = """
import toy_family


def test_toy_answer(aicr_check):
    expected = aicr_check.constraint()
    aicr_check.emit(f"answer: {toy_family.ANSWER}")
    problem = toy_family.verdict(expected.value)
    if problem:
        aicr_check.fail(problem)
"""


@pytest.fixture
def toy_checks(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy check's row in the catalog, its family importable and its test in the checks folder."""
    monkeypatch.setattr(catalog, "CATALOG", (*catalog.CATALOG, TOY))
    family = pytester.mkpydir("toy_family")
    (family / "__init__.py").write_text(TOY_FAMILY)
    (family / "hooks.py").write_text(TOY_HOOKS)
    pytester.syspathinsert()
    checks = pytester.mkdir("checks")
    (checks / "deployment").mkdir()
    (checks / "deployment" / "test_toy.py").write_text(TOY_TEST)
    monkeypatch.setattr(bundled, "checks_dir", lambda: checks)
    return checks


def _recipe(expected: str) -> dict[str, object]:
    return make_recipe(
        deployment=["toy-answer"],
        phase_constraints={"deployment": [{"name": "toy-answer", "value": expected}]},
    )


def _run(pytester: pytest.Pytester, write_inputs: Inputs, expected: str) -> tuple[pytest.RunResult, Path]:
    rp, sp = write_inputs(_recipe(expected))
    out = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out)
    )
    return result, out


@pytest.mark.usefixtures("toy_checks")
def test_a_toy_check_added_by_one_row_passes(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    result, out = _run(pytester, write_inputs, "42")
    assert result.ret == 0, result.stdout.str()
    (test,) = read_ctrf(out)["results"]["tests"]
    assert (test["name"], test["status"], test["suite"]) == ("toy-answer", "passed", ["deployment"])
    assert "answer: 42" in test["stdout"]


@pytest.mark.usefixtures("toy_checks")
def test_a_toy_check_added_by_one_row_fails(pytester: pytest.Pytester, write_inputs: Inputs) -> None:
    result, out = _run(pytester, write_inputs, "41")
    assert result.ret == 1, result.stdout.str()
    (test,) = read_ctrf(out)["results"]["tests"]
    assert (test["name"], test["status"]) == ("toy-answer", "failed")
    assert "the answer is 42, the recipe expects 41" in test["message"]


@pytest.mark.usefixtures("toy_checks")
def test_the_rows_hooks_module_validates_the_recipe_first(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    result, out = _run(pytester, write_inputs, "many")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: toy-answer: validation.deployment.constraints needs a whole-number*"]
    )
    assert "Traceback" not in result.stderr.str()
    assert not out.exists()


def test_a_bundled_test_no_row_names_stops_collection(
    pytester: pytest.Pytester, write_inputs: Inputs, toy_checks: Path
) -> None:
    (toy_checks / "deployment" / "test_orphan.py").write_text("def test_orphan(aicr_check):\n    pass\n")
    result, _ = _run(pytester, write_inputs, "42")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "E   pytest.UsageError: bundled test deployment/test_orphan.py::test_orphan: "
            "no catalog row names it (CheckSpec.test)"
        ]
    )


def test_a_bundled_test_takes_its_names_from_the_row_not_a_marker(
    pytester: pytest.Pytester, write_inputs: Inputs, toy_checks: Path
) -> None:
    marked = "import pytest\n" + TOY_TEST.replace("def ", "@pytest.mark.check('toy-answer')\ndef ")
    (toy_checks / "deployment" / "test_toy.py").write_text(marked)
    result, _ = _run(pytester, write_inputs, "42")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["E   pytest.UsageError: bundled test deployment/test_toy.py::test_toy_answer: its check names come*"]
    )


#: a conformance check: the row names the one conformance test and its family function
TOY_CONFORMANCE = catalog.CheckSpec(
    "toy-conformance",
    "conformance",
    60,
    "toy: the cluster answers",
    test="conformance/test_conformance.py::test_conformance",
    entry="toy_conformance:run_toy_conformance",
)

TOY_CONFORMANCE_FAMILY = """
from aicr_pytest import CheckSkip
from aicr_pytest.conformance.common import ConformanceFailure


def run_toy_conformance(ctx):
    answer = ctx.env.get("AICR_TOY_ANSWER")
    ctx.record("Toy answer", {"answer": answer})
    if answer is None:
        raise CheckSkip("no toy answer configured")
    if answer != "42":
        raise ConformanceFailure(f"the cluster answers {answer}, not 42")
"""


@pytest.mark.parametrize(
    ("answer", "status", "message"),
    [
        ("42", "passed", None),
        ("41", "failed", "the cluster answers 41, not 42"),
        (None, "skipped", "no toy answer configured"),
    ],
)
def test_a_conformance_check_is_one_row_and_one_function(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    write_inputs: Inputs,
    aicr_fake_cluster_factory: Any,
    answer: str | None,
    status: str,
    message: str | None,
) -> None:
    """No test function of its own: the row names the bundled conformance test and, as ``entry``,
    the family function, which gets the ``conformance`` fixture's context (an empty fake cluster)."""
    cluster = aicr_fake_cluster_factory()
    monkeypatch.setattr(catalog, "CATALOG", (*catalog.CATALOG, TOY_CONFORMANCE))
    (pytester.path / "toy_conformance.py").write_text(TOY_CONFORMANCE_FAMILY)
    pytester.syspathinsert()
    if answer is None:
        monkeypatch.delenv("AICR_TOY_ANSWER", raising=False)
    else:
        monkeypatch.setenv("AICR_TOY_ANSWER", answer)
    rp, sp = write_inputs(make_recipe(conformance=["toy-conformance"]))
    out = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(out),
        "--aicr-kubeconfig", str(cluster.kubeconfig_path),
    )  # fmt: skip
    (test,) = read_ctrf(out)["results"]["tests"]
    assert (test["name"], test["status"], test.get("message")) == ("toy-conformance", status, message)
    assert result.ret == (0 if status != "failed" else 1), result.stdout.str()
    [artifact] = test["extra"]["aicr.artifacts"]
    assert artifact["label"] == "Toy answer"
