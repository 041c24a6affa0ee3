"""``--ctrf-report PATH`` (``-`` for stdout): the run's CTRF document, written as a feature.

:func:`pytest_aicr_configure` checks the destination on the controller of an active run before the
inputs load (a bad one is a usage error before anything runs) and registers a :class:`CtrfReport`.
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

from aicr_pytest.core.errors import UsageError
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
        from aicr_pytest.report import ctrf

        ctrf.write(report, self.target, sys.stdout)
        return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_aicr_report_location(self, config: pytest.Config) -> str:
        return "CTRF report on stdout" if self.target == "-" else f"CTRF report {self.target}"


# the destination is probed after the other features' (``--html``'s), as before
@pytest.hookimpl(trylast=True)
def pytest_aicr_configure(config: pytest.Config, settings: Settings) -> None:
    """With ``--ctrf-report`` on the controller of an active run: probe the destination, then
    register the :class:`CtrfReport` (after the ``--html`` probe, as the options are listed)."""
    if not (settings.active and settings.ctrf_report) or is_worker(config):
        return
    from aicr_pytest.core.writable import check_writable

    try:
        check_writable(settings.ctrf_report, "--aicr-ctrf-report")
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    config.pluginmanager.register(CtrfReport(settings.ctrf_report), NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = ["NAME", "CtrfReport", "pytest_aicr_configure", "pytest_unconfigure"]
