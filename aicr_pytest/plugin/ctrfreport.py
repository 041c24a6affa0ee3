"""``--ctrf-report PATH`` (``-`` for stdout): the run's CTRF document, written as a feature.

:func:`pytest_aicr_configure` registers a :class:`CtrfReport` on the controller of an active run
(the destination is probed with the run's other outputs when its inputs load, before any check).
That writes the final document (:func:`aicr_pytest.report.ctrf.write`) from ``pytest_aicr_report``
as a wrapper, so the file is on disk before any other consumer of the document runs (the HTML
page, the evidence writers, a conftest's own).  The document itself is built by the core
(:func:`aicr_pytest.plugin.state.build_report`), whether or not it is written.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from aicr_pytest.plugin.state import is_worker

if TYPE_CHECKING:
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.plugin.state import FinishedRun

#: the plugin name of the registered :class:`CtrfReport`
NAME = "aicr-ctrf-report"


class CtrfReport:
    """``--ctrf-report``: the final document, written first (junitxml's ``LogXML`` model)."""

    def __init__(self, target: str) -> None:
        self.target = target

    @pytest.hookimpl(wrapper=True)
    def pytest_aicr_report(
        self, session: pytest.Session, report: dict[str, Any], run: FinishedRun
    ) -> Generator[None, list[None], list[None]]:
        from aicr_pytest.core.writable import OutputError
        from aicr_pytest.report import ctrf

        try:
            ctrf.write(report, self.target, sys.stdout)
        except OutputError as err:  # written to a temporary file instead; the run ends non-zero
            run.results.output_failed(str(err))
        return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_aicr_report_location(self, config: pytest.Config) -> str:
        return "CTRF report on stdout" if self.target == "-" else f"CTRF report {self.target}"


def pytest_aicr_configure(config: pytest.Config, settings: Settings) -> None:
    """With ``--ctrf-report`` on the controller of an active run: register the :class:`CtrfReport`
    (the run's inputs load probes the destination, with every other output's)."""
    if settings.active and settings.ctrf_report and not is_worker(config):
        config.pluginmanager.register(CtrfReport(settings.ctrf_report), NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = ["NAME", "CtrfReport", "pytest_aicr_configure", "pytest_unconfigure"]
