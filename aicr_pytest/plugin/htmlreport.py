"""The plugin's side of the HTML report: checking ``--html PATH`` and writing the page.

The option itself is an entry of the option table (:mod:`aicr_pytest.plugin.options`: ``--html``
on both entry points; under pytest also ``--aicr-html``, and ``--html`` is left to pytest-html when
that plugin is installed).  A feature module (:mod:`~aicr_pytest.plugin.features`):
:func:`configure` runs from ``pytest_aicr_configure`` on the controller of a run with ``--recipe``,
before the inputs load (a bad destination is a usage error before anything runs), and registers an
:class:`HtmlReport`; that writes the page from the final CTRF document (``pytest_aicr_report``),
also when the run was interrupted, and is unregistered in ``pytest_unconfigure``.  The page itself
is :mod:`aicr_pytest.report.html`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.writable import OutputError
from aicr_pytest.plugin.state import is_worker

if TYPE_CHECKING:
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.plugin.state import FinishedRun

#: the plugin name of the registered :class:`HtmlReport`
NAME = "aicr-html-report"


class HtmlReport:
    """``--html PATH``: the page of a finished (or interrupted) run (junitxml's ``LogXML`` model)."""

    def __init__(self, target: str) -> None:
        self.target = target

    # first of the report's consumers: the page is written before any evidence is
    @pytest.hookimpl(tryfirst=True)
    def pytest_aicr_report(self, session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
        self.write(report, run)

    @pytest.hookimpl(trylast=True)
    def pytest_aicr_report_location(self, config: pytest.Config) -> str:
        return f"HTML report {self.target}"

    def write(self, report: dict[str, Any], run: FinishedRun) -> None:
        """Write the page; a write error is one line on stderr."""
        from aicr_pytest.report import html
        from aicr_pytest.report.results import EXTRA_INTERRUPTED

        interrupted = run.exitstatus == pytest.ExitCode.INTERRUPTED
        results = run.results
        # an item the interrupt ended is finished as `other` with ``aicr.interrupted`` (plugin.interrupt)
        done = {(a.name, a.phase) for a in results.finished if not a.extra.get(EXTRA_INTERRUPTED)}
        unfinished = [f"{i.name} ({i.phase})" for i in run.items if (i.name, i.phase) not in done]
        info = html.run_info(
            run.inputs,
            interrupted=interrupted,
            unfinished=unfinished if interrupted else (),
            cleanup_hints=results.cleanup_hints,
        )
        try:
            html.write_page(
                self.target, report, info, figures=results.figures, secrets=[os.environ.get("HF_TOKEN")]
            )
        except OutputError as err:  # the page went to a temporary file; the run ends non-zero
            results.output_failed(str(err))


def configure(config: pytest.Config, target: str | None) -> None:
    """With ``--html``: check the destination (``pytest.UsageError`` when it cannot be written),
    then register the :class:`HtmlReport`."""
    if not target:
        return
    from aicr_pytest.core.writable import check_writable
    from aicr_pytest.report.html import check_target

    try:
        check_target(target)
        check_writable(target, "--html")  # a real probe: /proc, a read-only folder, a file as folder
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    config.pluginmanager.register(HtmlReport(target), NAME)


def pytest_aicr_configure(config: pytest.Config, settings: Settings) -> None:
    if settings.active and not is_worker(config):
        configure(config, settings.html)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = ["NAME", "HtmlReport", "configure", "pytest_aicr_configure", "pytest_unconfigure"]
