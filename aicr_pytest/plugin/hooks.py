"""The run's hooks: registered by the entry plugin (:mod:`aicr_pytest.plugin`) under the name
``aicr-run`` only when a run is asked for, so an unrelated test suite never imports them.

Each hook delegates: per-session state, the run's inputs and what a finished run publishes →
:mod:`~aicr_pytest.plugin.state`; catalog ∩ recipe → items, order and phase gates →
:mod:`~aicr_pytest.plugin.collection`; exception → status → :mod:`~aicr_pytest.plugin.outcomes`;
CTRF and terminal lines → :mod:`aicr_pytest.report`.

The hooks here name no optional feature.  The features (the list is
:mod:`~aicr_pytest.plugin.features`) are plugin modules that register their objects only when asked
for, each owning its state (pytest's junitxml ``LogXML`` is the model), through the seam of
:mod:`~aicr_pytest.plugin.hookspecs` that these hooks call: ``pytest_aicr_main`` instead of the
session, ``pytest_aicr_configure`` and ``pytest_aicr_replaces_run`` before the run's inputs load,
``pytest_aicr_configure_run`` after, ``pytest_aicr_finishing``, ``pytest_aicr_amend_report`` and
``pytest_aicr_report`` (the final CTRF document) from ``pytest_sessionfinish``.  What a feature
notes about the run's ending (:class:`~aicr_pytest.plugin.state.OutcomeNotes`) reaches the CTRF
document and the published outcome.

With ``--recipe`` and no test paths, the checks bundled in the wheel are collected.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import gcpause
from aicr_pytest.plugin import budget, bundled, collection, options, outcomes
from aicr_pytest.plugin import state as plugin_state
from aicr_pytest.plugin.state import get_state, is_worker
from aicr_pytest.report import terminal

#: the header line that names the checks a run collects when no test paths are given
BUNDLED_HEADER = "aicr-pytest: checks bundled with aicr-pytest, from "


def session_main(config: pytest.Config) -> int | None:
    """A feature that runs instead of the test session (``--cncf-submission``), the way pytest's own
    ``--markers`` replaces it: its exit code (called from the entry plugin's ``pytest_cmdline_main``;
    ``None``: the session runs)."""
    result: int | None = config.hook.pytest_aicr_main(config=config)
    return result


def pytest_configure(config: pytest.Config) -> None:
    collection.register_markers(config)
    state = plugin_state.start(config)
    collection.opt_in_by_marker(config, state)
    # the features check their options and destinations before anything touches the cluster
    config.hook.pytest_aicr_configure(config=config, settings=state.settings)
    # a feature that runs instead of the checks (--cncf-submission alone) leaves no phases to prepare
    if not config.hook.pytest_aicr_replaces_run(config=config):
        _start_run(config, state)
    collection.add_bundled_checks(config, state)


def _start_run(config: pytest.Config, state: plugin_state.PluginState) -> None:
    """The run's inputs, its result collector, then the features that need an active run."""
    plugin_state.load(config, state)
    if not state.active:
        return
    if not is_worker(config):
        config.pluginmanager.register(outcomes.ResultCollector(state), "aicr-result-collector")
    config.hook.pytest_aicr_configure_run(config=config, notes=state.notes)


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
    """xdist controller: hand the run's options as resolved (a worker resolves nothing again), the
    run id and the ledger location (phase plans, failed phases) to every worker."""
    state = get_state(node.config)
    if state is not None:
        node.workerinput[options.WORKER_KEY] = options.session_run(node.config).to_worker()
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


# an xdist worker shares its plan before it reports its collection (xdist's hook is plain)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Start-up is over: the console script's garbage-collection pause ends here
    (:mod:`~aicr_pytest.core.gcpause`)."""
    gcpause.resume()
    if is_worker(session.config):
        worker = str(session.config.workerinput["workerid"])  # type: ignore[attr-defined]
        collection.share_plan(session, get_state(session.config), worker)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist controller of an active run: a phase's checks together, the phases in order
    (:mod:`~aicr_pytest.plugin.phasesched`), whatever ``--dist`` says except ``each``."""
    state = get_state(config)
    if state is None or state.ledger is None or config.getvalue("dist") == "each":
        return None
    from xdist.workermanage import parse_tx_spec_config  # type: ignore[import-untyped]

    from aicr_pytest.plugin.phasesched import PhaseScheduling

    ledger = state.ledger
    return PhaseScheduling(
        config,
        numnodes=len(parse_tx_spec_config(config)),
        phases=state.settings.phases,
        plan=lambda node: ledger.read_plan(str(node.gateway.id)),
    )


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
        where=_details_at(config),
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


def _details_at(config: pytest.Config) -> list[str]:
    """Where a failure's full message and evidence are: each report the features wrote (the CTRF
    report, JUnit XML, the HTML page), then how to see full tracebacks."""
    where = list(config.hook.pytest_aicr_report_location(config=config))
    state = get_state(config)
    if not (state is not None and state.settings.debug) and config.option.tbstyle == "no":
        where.append("full tracebacks with --debug")
    return where


def pytest_aicr_report_location(config: pytest.Config) -> str | None:
    """pytest's own ``--junitxml``, between the CTRF report (first) and the HTML page (last)."""
    xmlpath = getattr(config.option, "xmlpath", None)
    return f"JUnit XML {xmlpath}" if xmlpath else None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The reports, written last: after pytest's own ``pytest_sessionfinish`` has torn down what an
    interrupt left set up (an interrupted check's cleanup runs there), so its kubectl hints count."""
    state = plugin_state.controller_state(session.config)
    if state is None:
        return
    # what the features note for the report: why the run stopped early (the deadline is off now)
    session.config.hook.pytest_aicr_finishing(session=session, notes=state.notes)
    report = plugin_state.build_report(state)
    session.config.hook.pytest_aicr_amend_report(session=session, report=report, notes=state.notes)
    if plugin_state.readiness_blocked(state) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    # every consumer of the final document: the CTRF file first, then the rest, a conftest's own too
    session.config.hook.pytest_aicr_report(
        session=session, report=report, run=plugin_state.finished_run(state, exitstatus)
    )
    if state.results.output_errors and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    plugin_state.remove_ledger(session.config, state)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = plugin_state.controller_state(config)
    if state is None:
        return
    for line in state.results.output_errors:  # last, below pytest's summary: what was not written
        print(f"aicr-pytest: error: {line}", file=sys.stderr, flush=True)
    outcome = plugin_state.run_outcome(state)  # the features' notes included
    if outcome is not None:
        config.hook.pytest_aicr_run_finished(config=config, outcome=outcome)
