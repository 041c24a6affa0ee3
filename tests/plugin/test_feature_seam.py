"""The features seam: a feature plugs in through aicr-pytest's hooks, and the core names none.

The core hooks (``aicr_pytest/plugin/__init__.py``, ``hooks.py``, ``state.py``) call
``pytest_aicr_main``, ``pytest_aicr_configure``,
``pytest_aicr_replaces_run``, ``pytest_aicr_configure_run``, ``pytest_aicr_finishing`` and
``pytest_aicr_report``; every feature (the list in ``aicr_pytest.plugin.features``) is a plugin
module that implements them, and so can a conftest.
"""

from __future__ import annotations

import ast
import importlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

import aicr_pytest.plugin
from aicr_pytest.plugin import features, hooks, state
from tests.plugin.helpers import make_recipe

Inputs = Callable[..., tuple[Path, Path]]

CORE_MODULES = [Path(aicr_pytest.plugin.__file__), Path(hooks.__file__), Path(state.__file__)]
#: the documents the features write, besides the feature modules themselves
WRITERS = ("aicr_pytest.report.ctrf", "aicr_pytest.report.html")


def _feature_names() -> tuple[set[str], set[str]]:
    """What would tie the core to a feature: the modules it may not import (dotted), and the
    identifiers it may not use (a feature module's name, a feature's or writer's class).  A
    setting of the same name (``settings.html``) is an option, not a feature."""
    modules: set[str] = set()
    identifiers: set[str] = set()
    for module_name in (*(m.__name__ for m in features.FEATURES), *WRITERS):
        modules.add(module_name)
        module = importlib.import_module(module_name)
        identifiers |= {n for n in getattr(module, "__all__", ()) if isinstance(getattr(module, n), type)}
    identifiers |= {m.__name__.rsplit(".", 1)[1] for m in features.FEATURES}
    return modules, identifiers


def _names_used(path: Path) -> tuple[set[str], set[str]]:
    """The modules ``path`` imports (dotted; ``from a import b`` gives ``a`` and ``a.b``), and its
    identifiers (names, attributes, imported names)."""
    modules: set[str] = set()
    identifiers: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module or "")
            modules |= {f"{node.module}.{a.name}" for a in node.names}
            identifiers |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Name):
            identifiers.add(node.id)
        elif isinstance(node, ast.Attribute):
            identifiers.add(node.attr)
    return modules, identifiers


def test_every_feature_is_a_registered_plugin_module_of_the_seam(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    assert len(features.FEATURES) == len(set(features.FEATURES))
    rp, sp = write_inputs()
    plain = pytester.parseconfigure("-p", "no:cacheprovider")
    assert not any(plain.pluginmanager.is_registered(m) for m in features.FEATURES)  # no run, no feature
    config = pytester.parseconfigure("-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp))
    for module in features.FEATURES:
        hooks = {n for n in vars(module) if n.startswith("pytest_aicr_")}
        assert hooks, f"{module.__name__} implements none of the features seam's hooks"
        assert config.pluginmanager.get_plugin(module.__name__) is module


@pytest.mark.parametrize("path", CORE_MODULES, ids=lambda p: p.name)
def test_the_core_hooks_name_no_feature(path: Path) -> None:
    modules, identifiers = _feature_names()
    assert {"aicr_pytest.plugin.htmlreport", "aicr_pytest.report.ctrf"} <= modules
    assert {"ctrfreport", "cncf_wiring", "InterruptWatch", "HtmlReport"} <= identifiers
    imported, used = _names_used(path)
    assert sorted(imported & modules) == []
    assert sorted(used & identifiers) == []


#: a feature of a conftest's own: registers for an active run, notes, reads the final document
TOY_FEATURE = """
import json
from pathlib import Path

import pytest

LOG = Path(__file__).parent / "toy.jsonl"

def log(**line):
    with LOG.open("a") as f:
        f.write(json.dumps(line) + "\\n")


class Toy:
    def __init__(self, notes):
        self.notes = notes

    def pytest_aicr_finishing(self, session, notes):
        log(step="finishing", same_notes=notes is self.notes, interrupted=notes.interrupted)

    def pytest_aicr_amend_report(self, session, report, notes):
        log(step="amend", same_notes=notes is self.notes)
        report.setdefault("extra", {})["toy.seen"] = True

    def pytest_aicr_report(self, session, report, run):
        ctrf = Path(__file__).parent / "ctrf.json"
        log(
            step="report",
            report=report,
            ctrf_on_disk=json.loads(ctrf.read_text()) if ctrf.exists() else None,
            same_notes=run.notes is self.notes,
        )

    def pytest_aicr_report_location(self, config):
        return "toy toy.jsonl"


def pytest_aicr_configure(config, settings):
    log(step="configure", active=settings.active)


def pytest_aicr_configure_run(config, notes):
    config.pluginmanager.register(Toy(notes), "toy-feature")
    log(step="configure_run")


def pytest_unconfigure(config):
    toy = config.pluginmanager.get_plugin("toy-feature")
    if toy is not None:
        config.pluginmanager.unregister(toy)
        log(step="unregistered")
"""

CHECKS = """
import pytest

@pytest.mark.check("operator-health")
def test_ok(aicr_check):
    aicr_check.emit("fine")

@pytest.mark.check("dra-support")
def test_fails(aicr_check):
    aicr_check.fail("no DRA driver")
"""


def test_a_conftest_feature_plugs_in_through_the_seam(
    pytester: pytest.Pytester, write_inputs: Inputs
) -> None:
    pytester.makeconftest(TOY_FEATURE)
    pytester.makepyfile(test_user=CHECKS)
    rp, sp = write_inputs(make_recipe(deployment=["operator-health"], conformance=["dra-support"]))
    ctrf = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "test_user.py", "--aicr-no-bundled-checks",
        "--recipe", str(rp), "--snapshot", str(sp), "--aicr-ctrf-report", str(ctrf),
        "--junitxml", "j.xml", "--aicr-html", "page.html",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    # each writer names its report, the CTRF report first and the HTML page last, as before
    where = f"details: CTRF report {ctrf}; toy toy.jsonl; JUnit XML j.xml; HTML report page.html"
    assert where in result.stdout.lines
    lines = [json.loads(line) for line in (pytester.path / "toy.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [
        "configure",
        "configure_run",
        "finishing",
        "amend",
        "report",
        "unregistered",
    ]
    configure, _, finishing, amend, report, _ = lines
    assert amend["same_notes"] is True
    assert configure["active"] is True
    assert finishing == {"step": "finishing", "same_notes": True, "interrupted": None}
    assert report["same_notes"] is True
    # the final document, amended, and written by the CTRF feature before any other consumer saw it
    assert report["report"] == report["ctrf_on_disk"] == json.loads(ctrf.read_text())
    assert report["report"]["extra"]["toy.seen"] is True
    assert [(t["name"], t["status"]) for t in report["report"]["results"]["tests"]] == [
        ("operator-health", "passed"),
        ("dra-support", "failed"),
    ]


def test_without_an_aicr_option_no_feature_is_asked(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(TOY_FEATURE)
    pytester.makepyfile(test_plain="def test_x():\n    assert 1\n")
    assert pytester.runpytest("-p", "no:cacheprovider").ret == 0
    assert not (pytester.path / "toy.jsonl").exists()
