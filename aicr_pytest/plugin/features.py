"""The optional features: one plugin module each, registered with the aicr plugin.

Each module below is a pytest plugin in the style of pytest's own ``junitxml`` (``LogXML``): it
implements the seam of :mod:`~aicr_pytest.plugin.hookspecs` — checks its options and registers its
plugin object only when asked for (``pytest_aicr_configure``, ``pytest_aicr_configure_run``),
collects what it needs through hooks of its own or the run's
:class:`~aicr_pytest.plugin.state.OutcomeNotes`, writes from the final CTRF document
(``pytest_aicr_report``) and unregisters in ``pytest_unconfigure``.  The core hooks
(:mod:`aicr_pytest.plugin`, :mod:`~aicr_pytest.plugin.state`) call the seam and name none of them.

Adding a feature: a module with those hooks, one line here.  The order of the list does not
matter; where two features must not swap, their hooks say so (``tryfirst``/``trylast``/wrapper).
"""

from __future__ import annotations

import pytest

pytest_plugins = (
    "aicr_pytest.plugin.ctrfreport",  # --ctrf-report
    "aicr_pytest.plugin.htmlreport",  # --html
    "aicr_pytest.plugin.cncf_wiring",  # --cncf-submission, --evidence-dir
    "aicr_pytest.plugin.evidence_wiring",  # --emit-attestation
    "aicr_pytest.plugin.interrupt",  # SIGINT, SIGTERM, --timeout
    "aicr_pytest.plugin.progress_sink",  # progress lines
)


def unregister(config: pytest.Config, name: str) -> None:
    """Drop the feature object registered under ``name``, if any (its work is done)."""
    plugin = config.pluginmanager.get_plugin(name)
    if plugin is not None:
        config.pluginmanager.unregister(plugin, name)


__all__ = ["pytest_plugins", "unregister"]
