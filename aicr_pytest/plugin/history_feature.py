"""The run history and baselines as a feature of the seam (:mod:`~aicr_pytest.plugin.features`).

Light on purpose: the history code (:mod:`~aicr_pytest.plugin.history_wiring`, SQLite, the
ConfigMap ring, the baseline logic) is imported only when ``--history``, ``--baseline`` or
``--max-regression`` asks for it, and at the end of a run for the report's identity."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from aicr_pytest.plugin.state import OutcomeNotes


def _asked(settings: Any) -> bool:
    return bool(settings.history or settings.baseline or settings.max_regression is not None)


def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    """``--history``/``--baseline``: checked before any check runs (a usage error: exit 2); the
    recorder (controller) and the gate (every process) registered."""
    from aicr_pytest.plugin.state import get_state, is_worker

    state = get_state(config)
    if state is None or not _asked(state.settings):
        return
    from aicr_pytest.plugin import history_wiring

    history_wiring.configure(config, state, controller=not is_worker(config))


def pytest_aicr_amend_report(session: pytest.Session, report: dict[str, Any], notes: OutcomeNotes) -> None:
    """Every report names the recipe and cluster it validated (fingerprints); with a baseline, CTRF
    ``baseline`` and each compared test's ``insights``."""
    from aicr_pytest.plugin import history_wiring
    from aicr_pytest.plugin.state import get_state

    state = get_state(session.config)
    if state is not None:
        history_wiring.finish_report(session.config, state, report)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """``--baseline``: the values that moved against it, worst first."""
    if config.pluginmanager.has_plugin("aicr-baseline"):
        from aicr_pytest.plugin import history_wiring

        history_wiring.terminal_summary(terminalreporter, config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The recorder and the gate leave with the run (pytest's ``LogXML`` does the same)."""
    for name in ("aicr-history", "aicr-baseline"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
