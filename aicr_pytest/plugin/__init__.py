"""The aicr-pytest pytest plugin (entry point ``pytest11: aicr``): hooks only, each delegating.

options → :mod:`~aicr_pytest.plugin.options` (the option table); per-session state, the run's
inputs and what a finished run publishes → :mod:`~aicr_pytest.plugin.state`; catalog ∩ recipe →
items, order and phase gates → :mod:`~aicr_pytest.plugin.collection`; exception → status →
:mod:`~aicr_pytest.plugin.outcomes`; fixtures → :mod:`~aicr_pytest.plugin.fixtures`; aicr-pytest's
own hooks → :mod:`~aicr_pytest.plugin.hookspecs`; CTRF and terminal lines → :mod:`aicr_pytest.report`;
the ``--html`` page → :mod:`~aicr_pytest.plugin.htmlreport`; ``--emit-attestation`` →
:mod:`~aicr_pytest.plugin.evidence_wiring`.

The plugin is inert unless ``--recipe`` is given, so installing it never changes other test
suites.  With ``--recipe`` and no test paths, the checks bundled in the wheel are collected.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.plugin import bundled, collection, evidence_wiring, hookspecs, htmlreport, options, outcomes
from aicr_pytest.plugin import state as plugin_state
from aicr_pytest.plugin.state import get_state, is_worker
from aicr_pytest.report import ctrf, terminal

#: the header line that names the checks a run collects when no test paths are given
BUNDLED_HEADER = "aicr-pytest: checks bundled with aicr-pytest, from "

#: the run's fixtures; the fake-cluster fixtures for anyone testing checks (testkit imports
#: nothing of aicr_pytest.testing until a test asks for a fake cluster)
pytest_plugins = ("aicr_pytest.plugin.fixtures", "aicr_pytest.plugin.testkit")


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_pytest_options(parser.getgroup(*options.PYTEST_GROUP))


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    collection.register_markers(config)
    state = plugin_state.start(config)
    if state.active and not is_worker(config):
        config.pluginmanager.register(outcomes.ResultCollector(state), "aicr-result-collector")
        evidence_wiring.configure(config, state)  # before any check: options, disclosure prompt
    collection.add_bundled_checks(config, state)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if bundled.is_bundled(module_path):
        return bundled.BundledModule.from_parent(parent, path=module_path)
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: hand the run id and the ledger location to every worker."""
    state = get_state(node.config)
    if state is not None and state.active:
        node.workerinput["aicr_run_id"] = state.run_id
        node.workerinput["aicr_ledger_dir"] = str(plugin_state.ledger_dir(state))


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = get_state(config)
    if state is None or state.run is None:
        return None
    s = state.settings
    header = state.run.recipe.header_line()
    lines = [
        terminal.header_line(
            header, snapshot=s.snapshot, no_cluster=s.no_cluster, simulated=s.simulated, run_id=state.run_id
        )
    ]
    if collection.only_bundled_checks(config):
        lines.append(f"{BUNDLED_HEADER}{bundled.checks_dir()}")
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    state = plugin_state.controller_state(session.config)
    if state is None or state.run is None:
        return
    run = state.run
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and collection.only_bundled_checks(session.config):
        # node ids of the bundled checks are relative to their own directory: show them as such
        # (deployment/test_deployment.py), not as a path under rootdir that does not exist
        tr.startpath = session.config.rootpath
    for line in terminal.preflight_lines(run.warnings, run.readiness.results, blocked=run.readiness.blocked):
        if tr is not None:
            tr.write_line(line)
        else:
            print(line, file=sys.stderr)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    collection.parametrize(metafunc, get_state(metafunc.config))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = get_state(config)
    if state is not None and state.run is not None:
        collection.select_and_order(config, items, state)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = get_state(item.config)
    reason = collection.gate(item, state) if state is not None else None
    if reason is not None:
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with outcomes.domain_skips():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    outcomes.annotate(item, call, report)
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    return outcomes.teststatus(report)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = plugin_state.controller_state(config)
    if state is None:
        return
    blocked = plugin_state.readiness_blocked(state)
    res = state.results
    sections = terminal.summary_sections(
        state.settings.phases, res.finished, readiness_blocked=blocked, cleanup_hints=res.cleanup_hints
    )
    for section in sections:
        terminalreporter.section(section.title, sep="-")
        for line in section.lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = plugin_state.controller_state(session.config)
    if state is None:
        return
    report = plugin_state.build_report(state)
    if state.settings.ctrf_report:
        ctrf.write(report, state.settings.ctrf_report, sys.stdout)
    htmlreport.write(state, exitstatus)  # the --html page: controller only, also when interrupted
    if plugin_state.readiness_blocked(state) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    evidence_wiring.finish(session, state, exitstatus)  # the bundle, from the final CTRF report
    plugin_state.remove_ledger(session.config, state)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = plugin_state.controller_state(config)
    outcome = plugin_state.run_outcome(state) if state is not None else None
    if outcome is not None:
        config.hook.pytest_aicr_run_finished(config=config, outcome=outcome)
