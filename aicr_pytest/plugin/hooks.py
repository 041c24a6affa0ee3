"""The run's hooks: registered by the entry plugin (:mod:`aicr_pytest.plugin`) under the name
``aicr-run`` only when a run is asked for, so an unrelated test suite never imports them.

Each hook delegates: per-session state, the run's inputs and what a finished run publishes →
:mod:`~aicr_pytest.plugin.state`; catalog ∩ recipe → items, order and phase gates →
:mod:`~aicr_pytest.plugin.collection`; exception → status → :mod:`~aicr_pytest.plugin.outcomes`;
CTRF and terminal lines → :mod:`aicr_pytest.report`.

The optional features are plugin objects registered in ``pytest_configure`` only when asked for,
each owning its state (pytest's junitxml ``LogXML`` is the model): the ``--html`` page
(:mod:`~aicr_pytest.plugin.htmlreport`), ``--emit-attestation``
(:mod:`~aicr_pytest.plugin.evidence_wiring`), ``--cncf-submission``/``--evidence-dir``
(:mod:`~aicr_pytest.plugin.cncf_wiring`), the interrupt watch
(:mod:`~aicr_pytest.plugin.interrupt`) and progress (:mod:`~aicr_pytest.plugin.progress_sink`).
Those that consume the finished run implement ``pytest_aicr_report``, which
``pytest_sessionfinish`` calls once with the final CTRF document.

With ``--recipe`` and no test paths, the checks bundled in the wheel are collected.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from aicr_pytest.core import gcpause
from aicr_pytest.core.writable import OutputError
from aicr_pytest.evidence.cncf.settings import CncfSettings
from aicr_pytest.plugin import (
    budget,
    bundled,
    cncf_wiring,
    collection,
    evidence_wiring,
    htmlreport,
    interrupt,
    junit,
    metrics_wiring,
    nodemarks_wiring,
    outcomes,
    progress_sink,
)
from aicr_pytest.plugin import state as plugin_state
from aicr_pytest.plugin.state import get_state, is_worker
from aicr_pytest.report import ctrf, terminal

#: the header line that names the checks a run collects when no test paths are given
BUNDLED_HEADER = "aicr-pytest: checks bundled with aicr-pytest, from "


def cncf_main(config: pytest.Config) -> int | None:
    """``--cncf-submission``: the evidence collector instead of a test session, the way
    pytest's own ``--markers`` replaces it (called from the entry plugin's ``pytest_cmdline_main``)."""
    if not cncf_wiring.wanted(config):
        return None
    config._do_configure()  # pytest_configure: option validation, recipe and policy (usage errors)
    return cncf_wiring.submit(config)


def pytest_configure(config: pytest.Config) -> None:
    collection.register_markers(config)
    state = plugin_state.start(config)
    collection.opt_in_by_marker(config, state)
    cncf = cncf_wiring.configure(config, state.settings)  # before anything touches the cluster
    # with --cncf-submission alone there are no phases: the collector replaces them; next to a
    # run's output (--emit-attestation, --html, --ctrf-report) it runs after them
    if not cncf.submission or cncf_wiring.alongside_run(config):
        _start_run(config, state, cncf)
    collection.add_bundled_checks(config, state)


def _start_run(config: pytest.Config, state: plugin_state.PluginState, cncf: CncfSettings) -> None:
    """The run's inputs, then the optional features it asked for, each a plugin object of its own."""
    controller = not is_worker(config)
    if state.settings.active and controller:
        htmlreport.configure(config, state.settings.html)  # a bad --html: before the inputs load
        metrics_wiring.configure(config, state.settings)  # a bad --metrics-file / --pushgateway too
    plugin_state.load(config, state)
    if not state.active:
        return
    config.pluginmanager.register(progress_sink.ProgressSink(config), progress_sink.NAME)
    if controller:
        config.pluginmanager.register(outcomes.ResultCollector(state), "aicr-result-collector")
        # before any check: options, disclosure prompt; a simulated run signs nothing
        evidence_wiring.configure(config, simulated=plugin_state.is_simulated(state.settings))
        interrupt.configure(config, state.results)
        junit.configure(config, state.results)  # --junitxml: whole or not at all
        cncf_wiring.register_renderer(config, cncf)  # --evidence-dir: path A
        nodemarks_wiring.configure(config, state)  # --label-bad-nodes / --taint-bad-nodes


_Feature = TypeVar("_Feature")


def _feature(config: pytest.Config, name: str, kind: type[_Feature]) -> _Feature | None:
    """The optional feature registered under ``name`` (``None``: it was not asked for)."""
    plugin = config.pluginmanager.get_plugin(name)
    return plugin if isinstance(plugin, kind) else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A bundled check file that implements no selected check is not imported (start-up)."""
    state = get_state(config)
    if state is None or state.run is None:
        return None
    return True if bundled.not_needed(collection_path, {s.spec.name for s in state.run.selected}) else None


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
    pod = False  # as the pod's service account (in-cluster mode): asked only where a cluster is used
    if not s.simulated and not s.no_cluster:
        from aicr_pytest.kube.kubeconfig import in_cluster

        pod = in_cluster(s.kubeconfig)
    lines = [
        terminal.header_line(
            header,
            snapshot=s.snapshot,
            no_cluster=s.no_cluster,
            simulated=s.simulated,
            run_id=state.run_id,
            in_cluster=pod,
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
    if plugin_state.is_simulated(state.settings):
        junit.simulated(session.config, str(state.settings.simulated))
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


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start-up is over: the console script's garbage-collection pause ends here
    (:mod:`~aicr_pytest.core.gcpause`)."""
    gcpause.resume()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = get_state(item.config)
    reason = collection.gate(item, state) if state is not None else None
    if reason is not None:
        outcomes.phase_skip(item, reason)


@pytest.hookimpl(wrapper=True, specname="pytest_runtest_setup")
def pytest_runtest_setup_skips(item: pytest.Item) -> Generator[None, None, None]:
    """A fixture's ``aicr_check.skip(...)`` (a :class:`~aicr_pytest.core.errors.CheckSkip`) skips the
    check."""
    with outcomes.domain_skips():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    seconds, message = outcomes.budget_of(item)
    with (
        outcomes.cluster_gate(item),
        outcomes.domain_skips(),
        budget.enforced(seconds, message) as cut,
        outcomes.cut_on_trip(item, cut),
    ):
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
    _other_tracebacks(terminalreporter, config)
    blocked = plugin_state.readiness_blocked(state)
    res = state.results
    sections = terminal.summary_sections(
        state.settings.phases,
        res.finished,
        readiness_blocked=blocked,
        cleanup_hints=res.cleanup_hints,
        where=_details_at(config, state),
        width=_terminal_width(terminalreporter, config),
    )
    for section in sections:
        terminalreporter.section(section.title, sep="-")
        for line in section.lines:
            terminalreporter.write_line(line)


def _terminal_width(terminalreporter: Any, config: pytest.Config) -> int | None:
    """The terminal's width (pytest's writer knows it: ``COLUMNS`` or 80 when not a terminal);
    ``None`` (lines uncut) on CI and with ``-vv``, as pytest's own short summary."""
    if os.environ.get("CI") or os.environ.get("BUILD_NUMBER") or config.get_verbosity() >= 2:
        return None
    width = getattr(getattr(terminalreporter, "_tw", None), "fullwidth", None)
    return width if isinstance(width, int) and width > 0 else None


def _other_tracebacks(terminalreporter: Any, config: pytest.Config) -> None:
    """pytest lists only ``failed`` reports under FAILURES; an ``other`` (a crash) deserves its
    traceback just as much when tracebacks are asked for (``--debug``, ``--tb``)."""
    if config.option.tbstyle in ("no", "line"):
        return
    reports = [r for r in terminalreporter.getreports("other") if getattr(r, "longreprtext", "")]
    if not reports:
        return
    terminalreporter.write_sep("=", "OTHER (errors that left a check inconclusive)")
    for report in reports:
        terminalreporter.write_sep("_", report.head_line or report.nodeid)
        terminalreporter.write_line(report.longreprtext)


def _details_at(config: pytest.Config, state: plugin_state.PluginState) -> list[str]:
    """Where a failure's full message and evidence are: the CTRF report, JUnit XML, the HTML page."""
    where: list[str] = []
    target = state.settings.ctrf_report
    if target == "-":
        where.append("CTRF report on stdout")
    elif target:
        where.append(f"CTRF report {target}")
    xmlpath = getattr(config.option, "xmlpath", None)
    if xmlpath:
        where.append(f"JUnit XML {xmlpath}")
    if state.settings.html:
        where.append(f"HTML report {state.settings.html}")
    if not getattr(config.option, "aicr_debug", None) and config.option.tbstyle == "no":
        where.append("full tracebacks with --debug")
    return where


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The reports, written last: after pytest's own ``pytest_sessionfinish`` has torn down what an
    interrupt left set up (an interrupted check's cleanup runs there), so its kubectl hints count."""
    state = plugin_state.controller_state(session.config)
    if state is None:
        return
    watch = _feature(session.config, interrupt.WATCH_NAME, interrupt.InterruptWatch)
    if watch is not None:
        watch.stop_deadline()  # the reports are written whatever the clock says
        interrupt.collect_late_hints(watch.collected, state.results)
    report = plugin_state.build_report(state, interrupted=watch.reason if watch is not None else None)
    if state.settings.ctrf_report:
        try:
            ctrf.write(report, state.settings.ctrf_report, sys.stdout)
        except OutputError as err:  # written to a temporary file instead; the run ends non-zero
            state.results.output_failed(str(err))
    if plugin_state.readiness_blocked(state) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    # the --html page, --evidence-dir (path A), the --emit-attestation bundle, a conftest's own
    session.config.hook.pytest_aicr_report(
        session=session, report=report, run=plugin_state.finished_run(state, exitstatus)
    )
    junit.restore(session.config)
    if state.results.output_errors and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    plugin_state.remove_ledger(session.config, state)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = plugin_state.controller_state(config)
    if state is None:
        return
    for line in state.results.output_errors:  # last, below pytest's summary: what was not written
        print(f"aicr-pytest: error: {line}", file=sys.stderr, flush=True)
    evidence = _feature(config, evidence_wiring.NAME, evidence_wiring.EvidenceEmitter)
    watch = _feature(config, interrupt.WATCH_NAME, interrupt.InterruptWatch)
    renderer = _feature(config, cncf_wiring.RENDERER_NAME, cncf_wiring.CncfRenderer)
    outcome = plugin_state.run_outcome(
        state,
        evidence_error=evidence.error if evidence is not None else None,
        interrupted=watch.reason if watch is not None else None,
        render_error=renderer.error if renderer is not None else None,
    )
    if outcome is not None:
        config.hook.pytest_aicr_run_finished(config=config, outcome=outcome)
