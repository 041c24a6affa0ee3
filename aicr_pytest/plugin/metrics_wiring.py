"""``--metrics-file`` / ``--pushgateway``: the run as Prometheus metrics (a feature object, junitxml's
``LogXML`` model; the series are :mod:`aicr_pytest.report.metrics`).

:func:`configure` checks the destination before the run (an unwritable ``--metrics-file`` or a
``--pushgateway`` that is not an http(s) URL is a usage error, nothing runs) and registers a
:class:`MetricsExporter` on the controller only when one is asked for.  It writes and pushes from
the final CTRF document (``pytest_aicr_report``), so the CTRF report is already written when a push
is tried; a push or write that fails is one warning line on stderr and never changes the run's
verdict.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.plugin.state import is_worker

if TYPE_CHECKING:
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.plugin.state import FinishedRun

#: the plugin name of the registered :class:`MetricsExporter`
NAME = "aicr-metrics"


class MetricsExporter:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        #: the warning lines of what failed (a test reads them)
        self.warnings: list[str] = []

    @pytest.hookimpl(trylast=True)  # after the reports that carry the verdict
    def pytest_aicr_report(self, session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
        from aicr_pytest.report import metrics

        recipe = run.inputs.recipe.display_name
        cluster = metrics.cluster_label(report, self.settings.kube_context or "default")
        reg = metrics.registry(report, recipe=recipe, cluster=cluster)
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.ensure_newline()  # a warning starts a line of its own
        if self.settings.metrics_file:
            try:
                metrics.write_textfile(self.settings.metrics_file, reg)
            except OSError as err:
                self._warn(f"--metrics-file {self.settings.metrics_file}: {err.strerror or err}")
        if self.settings.pushgateway:
            try:
                metrics.push(self.settings.pushgateway, reg, recipe=recipe, cluster=cluster)
            except OSError as err:
                self._warn(metrics.MSG_PUSH_FAILED.format(url=self.settings.pushgateway, why=err))

    def _warn(self, line: str) -> None:
        self.warnings.append(line)
        print(f"aicr-pytest: warning: {line}", file=sys.stderr)


def configure(config: pytest.Config, settings: Settings) -> None:
    """With ``--metrics-file`` or ``--pushgateway``: check them, then register the exporter."""
    if not (settings.metrics_file or settings.pushgateway):
        return
    from aicr_pytest.core.writable import check_writable
    from aicr_pytest.report.metrics import check_pushgateway

    try:
        if settings.metrics_file == "-":
            raise UsageError("--metrics-file -: give a file path (node-exporter reads *.prom files)")
        if settings.metrics_file:
            check_writable(settings.metrics_file, "--metrics-file")
        if settings.pushgateway:
            check_pushgateway(settings.pushgateway)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    config.pluginmanager.register(MetricsExporter(settings), NAME)


def pytest_aicr_configure(config: pytest.Config, settings: Settings) -> None:
    """A feature module (:mod:`~aicr_pytest.plugin.features`): on the controller of an active run,
    before its inputs load."""
    if settings.active and not is_worker(config):
        configure(config, settings)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = ["NAME", "MetricsExporter", "configure", "pytest_aicr_configure", "pytest_unconfigure"]
