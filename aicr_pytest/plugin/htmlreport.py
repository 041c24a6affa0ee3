"""The plugin's side of the HTML report (#18): checking ``--html PATH`` and writing the page.

The option itself is an entry of the option table (:mod:`aicr_pytest.plugin.options`: ``--html``
on both entry points; under pytest also ``--aicr-html``, and ``--html`` is left to pytest-html when
that plugin is installed).  :func:`check_option` runs when the run's state starts (a bad
destination is a usage error before anything runs); :func:`write` runs in ``pytest_sessionfinish``
on the controller, also when the run was interrupted.  The page itself is
:mod:`aicr_pytest.report.html`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.settings import Settings

if TYPE_CHECKING:
    from aicr_pytest.plugin.state import PluginState


def check_option(settings: Settings) -> None:
    """Raise ``pytest.UsageError`` when the ``--html`` destination cannot be written."""
    if not settings.html:
        return
    from aicr_pytest.report.html import check_target

    try:
        check_target(settings.html)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None


def write(state: PluginState, exitstatus: int) -> None:
    """Write the page for a finished (or interrupted) run; a write error is one line on stderr."""
    target = state.settings.html
    if not target or state.run is None or state.report is None:
        return
    from aicr_pytest.report import html
    from aicr_pytest.report.results import EXTRA_INTERRUPTED

    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    results = state.results
    # an item the interrupt ended is finished as `other` with ``aicr.interrupted`` (plugin.interrupt)
    done = {(a.name, a.phase) for a in results.finished if not a.extra.get(EXTRA_INTERRUPTED)}
    unfinished = [f"{i.name} ({i.phase})" for i in state.items if (i.name, i.phase) not in done]
    info = html.run_info(
        state.run,
        interrupted=interrupted,
        unfinished=unfinished if interrupted else (),
        cleanup_hints=results.cleanup_hints,
    )
    try:
        html.write_page(
            target, state.report, info, figures=results.figures, secrets=[os.environ.get("HF_TOKEN")]
        )
    except OSError as err:
        print(f"aicr-pytest: error: --html {target}: {err.strerror or err}", file=sys.stderr)


__all__ = ["check_option", "write"]
