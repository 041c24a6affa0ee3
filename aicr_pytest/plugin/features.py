"""The optional features: one plugin module each, registered with the aicr plugin.

Each module below is a pytest plugin in the style of pytest's own ``junitxml`` (``LogXML``): it
implements the seam of :mod:`~aicr_pytest.plugin.hookspecs` — checks its options and registers its
plugin object only when asked for (``pytest_aicr_configure``, ``pytest_aicr_configure_run``),
collects what it needs through hooks of its own or the run's
:class:`~aicr_pytest.plugin.state.OutcomeNotes`, writes from the final CTRF document
(``pytest_aicr_report``) and unregisters in ``pytest_unconfigure``.  The core hooks
(:mod:`aicr_pytest.plugin`, :mod:`~aicr_pytest.plugin.state`) call the seam and name none of them.

Adding a feature: a module with those hooks, one line in :data:`FEATURES`.  Where two features
must not swap, their hooks say so (``tryfirst``/``trylast``/wrapper); otherwise pluggy calls the
last registered first.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from aicr_pytest.plugin import (
    cncf_wiring,
    ctrfreport,
    evidence_wiring,
    htmlreport,
    interrupt,
    junit,
    metrics_wiring,
    nodemarks_wiring,
    progress_sink,
)

#: plain hooks run last-registered first: ``--html`` is checked before ``--metrics-file``
FEATURES: tuple[ModuleType, ...] = (
    ctrfreport,  # --ctrf-report
    metrics_wiring,  # --metrics-file, --pushgateway
    htmlreport,  # --html
    cncf_wiring,  # --cncf-submission, --evidence-dir
    evidence_wiring,  # --emit-attestation
    interrupt,  # SIGINT, SIGTERM, --timeout
    junit,  # --junitxml, written whole or not at all
    nodemarks_wiring,  # --label-bad-nodes, --taint-bad-nodes
    progress_sink,  # progress lines
)


def register(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register every feature module under its module name (``-p no:<name>`` blocks one).

    Registered, not listed in ``pytest_plugins``: pytest would rewrite the asserts of a module
    listed there, compiling it again at every start."""
    for module in FEATURES:
        if pluginmanager.get_plugin(module.__name__) is None and not pluginmanager.is_blocked(
            module.__name__
        ):
            pluginmanager.register(module, module.__name__)


__all__ = ["FEATURES", "register"]
