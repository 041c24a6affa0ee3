"""pytest's ``--junitxml`` written the way every other report is: whole or not at all.

pytest's own junitxml plugin opens the destination and writes into it at the end of the session;
a full disk leaves a truncated file and any write error ends the run in a traceback (and the
session-finish hooks after it, the CTRF report among them, never run).  :class:`AtomicJunit`
(registered on the controller of an active run) asks pytest's ``LogXML`` for the document first
(``tryfirst``), into a private temporary file, and writes it to the destination with
:func:`aicr_pytest.core.writable.write_output`; a failure is one line and a non-zero exit
(:meth:`~aicr_pytest.report.results.RunResults.output_failed`).  ``LogXML``'s own call then writes
to ``os.devnull``, and :func:`restore` puts the destination back before the terminal summary names it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.junitxml import xml_key

from aicr_pytest.core.writable import MSG_WRITE_FAILED, OutputError, errno_text, write_output
from aicr_pytest.plugin.state import OutcomeNotes, controller_state, is_simulated
from aicr_pytest.report.results import RunResults

if TYPE_CHECKING:
    from aicr_pytest.plugin.state import FinishedRun

#: the plugin name of the registered :class:`AtomicJunit`
NAME = "aicr-junit-atomic"
_TARGET_KEY = pytest.StashKey[str]()


class AtomicJunit:
    def __init__(self, results: RunResults) -> None:
        self.results = results

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        write(session.config, self.results)

    # after every other consumer of the final document: the terminal summary names the file next
    @pytest.hookimpl(trylast=True)
    def pytest_aicr_report(self, session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
        restore(session.config)


def write(config: pytest.Config, results: RunResults) -> None:
    """Write ``--junitxml`` atomically now (nothing when it was not asked for)."""
    xml = config.stash.get(xml_key, None)
    if xml is None or xml.logfile == os.devnull:
        return
    target = str(xml.logfile)
    config.stash[_TARGET_KEY] = target
    fd, tmp = tempfile.mkstemp(prefix="aicr-pytest-junit-", suffix=".xml")
    os.close(fd)
    try:
        xml.logfile = tmp
        xml.pytest_sessionfinish()
        write_output(target, Path(tmp).read_bytes(), "--junitxml")
    except OutputError as err:
        results.output_failed(str(err))
        if err.fallback is not None:  # the summary's "generated xml file" names where it is
            config.stash[_TARGET_KEY] = str(err.fallback)
    except OSError as err:  # the private temporary file itself
        results.output_failed(MSG_WRITE_FAILED.format(flag="--junitxml", path=target, why=errno_text(err)))
    finally:
        xml.logfile = os.devnull  # pytest's own call, still to come, writes nowhere
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def restore(config: pytest.Config) -> None:
    """Give ``LogXML`` its destination back (the terminal summary names it)."""
    xml = config.stash.get(xml_key, None)
    target = config.stash.get(_TARGET_KEY, None)
    if xml is not None and target is not None:
        xml.logfile = target


def simulated(config: pytest.Config, profile: str) -> None:
    """``--junitxml`` of a ``--simulate`` run: the test suite's properties say so."""
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        xml.add_global_property("aicr.simulated", "true")
        xml.add_global_property("aicr.simulatedProfile", profile)


def configure(config: pytest.Config, results: RunResults) -> None:
    config.pluginmanager.register(AtomicJunit(results), NAME)


def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    """A feature module (:mod:`~aicr_pytest.plugin.features`): on the controller of an active run."""
    state = controller_state(config)
    if state is not None:
        configure(config, state.results)


def pytest_sessionstart(session: pytest.Session) -> None:
    """A ``--simulate`` run's ``--junitxml``: :func:`simulated`."""
    state = controller_state(session.config)
    if state is not None and state.run is not None and is_simulated(state.settings):
        simulated(session.config, str(state.settings.simulated))


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=NAME)


__all__ = [
    "NAME",
    "AtomicJunit",
    "configure",
    "pytest_aicr_configure_run",
    "pytest_sessionstart",
    "pytest_unconfigure",
    "restore",
    "simulated",
    "write",
]
