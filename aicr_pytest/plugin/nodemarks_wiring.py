"""``--label-bad-nodes`` / ``--taint-bad-nodes``: the plugin's side (a feature object, junitxml's
``LogXML`` model).

:func:`configure` registers a :class:`NodeMarker` on the controller only when one of the flags is
given (never by default).  At the end of the session, before the CTRF report is built, it reads
the node verdicts of the finished checks (:func:`aicr_pytest.health.nodemarks.node_verdicts`),
patches those nodes and nothing else (:func:`aicr_pytest.health.nodemarks_run.mark_nodes`), records
every change under the report's ``extra["aicr.nodeMarks"]`` and prints one line per node.  A node
that cannot be patched is recorded with its error; the run's verdict does not change.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from aicr_pytest.plugin.state import OutcomeNotes, controller_state

if TYPE_CHECKING:
    from aicr_pytest.plugin.state import PluginState

#: the plugin name of the registered :class:`NodeMarker`
NAME = "aicr-node-marks"
#: the terminal line's prefix
PREFIX = "aicr-pytest: "


class NodeMarker:
    def __init__(self, state: PluginState) -> None:
        self.state = state
        self.records: list[dict[str, object]] = []

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Runs before the core hook builds the CTRF report (that one is ``trylast``)."""
        from aicr_pytest.core.errors import UsageError
        from aicr_pytest.health import nodemarks, nodemarks_run
        from aicr_pytest.kube.errors import ApiError

        settings, handle = self.state.settings, self.state.cluster_handle
        verdicts = nodemarks.node_verdicts((a.name, a.extra) for a in self.state.results.finished)
        if not verdicts or handle is None or settings.no_cluster:
            return
        try:
            cluster = handle.get()
        except (UsageError, ApiError) as err:  # the checks connected; this should not happen
            self.records = [{"node": n, "verdict": v.verdict, "error": str(err)} for n, v in verdicts.items()]
        else:
            self.records = nodemarks_run.mark_nodes(
                cluster, verdicts, label=settings.label_bad_nodes, taint=settings.taint_bad_nodes
            )
        self.state.results.report_extra[nodemarks.EXTRA_NODE_MARKS] = self.records
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in nodemarks.change_lines(self.records):
            if tr is not None:
                tr.write_line(PREFIX + line)
            else:
                print(PREFIX + line, file=sys.stderr)


def configure(config: pytest.Config, state: PluginState) -> None:
    """Register the :class:`NodeMarker` when ``--label-bad-nodes`` or ``--taint-bad-nodes`` is given."""
    if state.settings.label_bad_nodes or state.settings.taint_bad_nodes:
        config.pluginmanager.register(NodeMarker(state), NAME)


def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    """A feature module (:mod:`~aicr_pytest.plugin.features`): on the controller of an active run."""
    state = controller_state(config)
    if state is not None:
        configure(config, state)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = ["NAME", "NodeMarker", "configure", "pytest_aicr_configure_run", "pytest_unconfigure"]
