"""html wiring (#18): the ``--html PATH`` option of plain pytest, and writing the page.

The plugin calls three functions: :func:`add_option` (``pytest_addoption``), :func:`check_option`
(``pytest_configure``: a bad destination is a usage error before anything runs) and :func:`write`
(``pytest_sessionfinish`` on the controller, also when the run was interrupted).  The page itself is
:mod:`aicr_pytest.report.html`.

``--aicr-html`` is always registered; ``--html`` too, unless pytest-html is installed (it owns that
spelling, and two plugins cannot register one option).  ``aicr-pytest validate --html`` passes
``--aicr-html``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import TYPE_CHECKING

import pytest

from aicr_pytest.core.errors import UsageError

if TYPE_CHECKING:
    from aicr_pytest.plugin import PluginState

OPTION_DEST = "aicr_html"


def option_names() -> tuple[str, ...]:
    if importlib.util.find_spec("pytest_html") is not None:
        return ("--aicr-html",)
    return ("--html", "--aicr-html")


def add_option(group: pytest.OptionGroup) -> None:
    group.addoption(
        *option_names(),
        dest=OPTION_DEST,
        metavar="PATH",
        help="write a self-contained HTML report of the run (one page, opens offline)",
    )


def check_option(config: pytest.Config) -> None:
    target = getattr(config.option, OPTION_DEST, None)
    if not target:
        return
    from aicr_pytest.report.html import check_target

    try:
        check_target(target)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None


def write(session: pytest.Session, state: PluginState, exitstatus: int) -> None:
    """Write the page for a finished (or interrupted) run; a write error is one line on stderr."""
    target = getattr(session.config.option, OPTION_DEST, None)
    if not target or state.run is None or state.report is None:
        return
    from aicr_pytest.report import html

    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    done = {(a.name, a.phase) for a in state.results}
    unfinished = [f"{i.name} ({i.phase})" for i in state.items if (i.name, i.phase) not in done]
    info = html.run_info(
        state.run,
        interrupted=interrupted,
        unfinished=unfinished if interrupted else (),
        cleanup_hints=state.cleanup_hints,
    )
    try:
        html.write_page(
            target, state.report, info, figures=state.html_figures, secrets=[os.environ.get("HF_TOKEN")]
        )
    except OSError as err:
        print(f"aicr-pytest: error: --html {target}: {err.strerror or err}", file=sys.stderr)
